#include "store/sqlite/connection.h"

namespace hcprp::store::sqlite {

Error SqliteError(sqlite3* db, int rc, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  // sqlite3_errmsg describes the most recent failure of `db`, which is `rc` when called right away.
  msg += (db != nullptr && sqlite3_extended_errcode(db) == rc) ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  msg += " (sqlite code " + std::to_string(rc) + ")";
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error::Unavailable(std::move(msg));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Error::Corruption(std::move(msg));
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_AUTH:
      return Error::IoError(std::move(msg));
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return Error::InvalidArgument(std::move(msg));
    default:
      return Error::Internal(std::move(msg));
  }
}

Status Stmt::Run(std::string_view context) {
  int rc = Step();
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) return Status::Ok();
  return SqliteError(db_, rc, context);
}

namespace {

// SQLite's memory statistics take one process-wide mutex on every allocation and free, which every
// connection's thread then contends for; nothing here reads those statistics. They can be turned off
// only before SQLite initialises, so this runs ahead of the first open. When something else in the
// process initialised SQLite first, the call is refused and the statistics stay on, which is harmless.
void TurnOffMemoryStatistics() {
  static const int kOnce = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)kOnce;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, const std::string& vfs,
                                                     int flags, std::chrono::milliseconds busy_timeout) {
  TurnOffMemoryStatistics();
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, vfs.empty() ? nullptr : vfs.c_str());
  if (rc != SQLITE_OK) {
    Error e = SqliteError(db, rc, "open " + path);
    sqlite3_close_v2(db);
    return e;
  }
  std::unique_ptr<Connection> c(new Connection(db));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(busy_timeout.count()));
  return c;
}

Connection::~Connection() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  for (auto& [key, s] : keyed_) sqlite3_finalize(s);
  sqlite3_close_v2(db_);
}

Result<sqlite3_stmt*> Connection::PrepareText(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size() + 1), SQLITE_PREPARE_PERSISTENT,
                              &s, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, "prepare \"" + sql + "\"");
  return s;
}

Result<sqlite3_stmt*> Connection::Prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return it->second;
  HCPRP_ASSIGN_OR_RETURN(auto s, PrepareText(sql));
  cache_.emplace(sql, s);
  return s;
}

Status Connection::Exec(const char* sql, std::string_view context) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (err != nullptr) sqlite3_free(err);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, context);
  return Status::Ok();
}

Result<int64_t> Connection::QueryInt(const char* sql, std::string_view context) {
  auto p = Prepare(sql);
  if (!p.ok()) return Error(p.error().code(), std::string(context) + ": " + p.error().message());
  Stmt s(db_, *p);
  int rc = s.Step();
  if (rc == SQLITE_ROW) return s.Int(0);
  if (rc == SQLITE_DONE) return int64_t{0};
  return SqliteError(db_, rc, context);
}

Result<std::string> Connection::QueryText(const char* sql, std::string_view context) {
  auto p = Prepare(sql);
  if (!p.ok()) return Error(p.error().code(), std::string(context) + ": " + p.error().message());
  Stmt s(db_, *p);
  int rc = s.Step();
  if (rc == SQLITE_ROW) return std::string(s.Text(0));
  if (rc == SQLITE_DONE) return std::string();
  return SqliteError(db_, rc, context);
}

}  // namespace hcprp::store::sqlite
