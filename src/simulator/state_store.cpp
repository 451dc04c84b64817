#include "simulator/state_store.h"

#include <sqlite3.h>

#include <filesystem>

namespace hcprp::simulator {
namespace {

class MemoryStateStore final : public StateStore {
 public:
  Result<Snapshot> Load() override { return Snapshot{}; }
  Status Commit(const std::vector<std::pair<std::string, std::string>>&, const std::vector<std::string>&,
                uint64_t) override {
    return Status::Ok();
  }
};

class SqliteStateStore final : public StateStore {
 public:
  explicit SqliteStateStore(sqlite3* db) : db_(db) {}
  ~SqliteStateStore() override {
    sqlite3_finalize(put_);
    sqlite3_finalize(del_);
    sqlite3_finalize(meta_);
    sqlite3_close(db_);
  }

  Status Init() {
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL"));
    HCPRP_RETURN_IF_ERROR(
        Exec("CREATE TABLE IF NOT EXISTS objects(href TEXT PRIMARY KEY, doc TEXT NOT NULL)"));
    HCPRP_RETURN_IF_ERROR(Exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"));
    HCPRP_RETURN_IF_ERROR(
        Prepare("INSERT INTO objects(href, doc) VALUES(?1, ?2) "
                "ON CONFLICT(href) DO UPDATE SET doc = excluded.doc",
                &put_));
    HCPRP_RETURN_IF_ERROR(Prepare("DELETE FROM objects WHERE href = ?1", &del_));
    HCPRP_RETURN_IF_ERROR(
        Prepare("INSERT INTO meta(key, value) VALUES('last_sequence', ?1) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                &meta_));
    return Status::Ok();
  }

  Result<Snapshot> Load() override {
    Snapshot snap;
    sqlite3_stmt* st = nullptr;
    HCPRP_RETURN_IF_ERROR(Prepare("SELECT doc FROM objects", &st));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      snap.documents.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return Err("reading objects");
    HCPRP_RETURN_IF_ERROR(Prepare("SELECT value FROM meta WHERE key = 'last_sequence'", &st));
    if (sqlite3_step(st) == SQLITE_ROW) {
      snap.last_sequence = std::stoull(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    }
    sqlite3_finalize(st);
    return snap;
  }

  Status Commit(const std::vector<std::pair<std::string, std::string>>& puts,
                const std::vector<std::string>& deletes, uint64_t last_sequence) override {
    HCPRP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    auto fail = [&](const char* what) {
      Error e = Err(what);
      (void)Exec("ROLLBACK");
      return e;
    };
    for (const auto& [key, doc] : puts) {
      sqlite3_reset(put_);
      sqlite3_bind_text(put_, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(put_, 2, doc.data(), static_cast<int>(doc.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(put_) != SQLITE_DONE) return fail("writing an object");
    }
    for (const auto& key : deletes) {
      sqlite3_reset(del_);
      sqlite3_bind_text(del_, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
      if (sqlite3_step(del_) != SQLITE_DONE) return fail("deleting an object");
    }
    sqlite3_reset(meta_);
    std::string seq = std::to_string(last_sequence);
    sqlite3_bind_text(meta_, 1, seq.data(), static_cast<int>(seq.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(meta_) != SQLITE_DONE) return fail("writing the sequence");
    return Exec("COMMIT");
  }

 private:
  Error Err(const std::string& what) const {
    return Error::IoError("simulator state: " + what + ": " + sqlite3_errmsg(db_));
  }

  Status Exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string m = msg ? msg : "unknown error";
      sqlite3_free(msg);
      return Error::IoError(std::string("simulator state: ") + sql + ": " + m);
    }
    return Status::Ok();
  }

  Status Prepare(const char* sql, sqlite3_stmt** st) {
    if (sqlite3_prepare_v2(db_, sql, -1, st, nullptr) != SQLITE_OK)
      return Err(std::string("preparing ") + sql);
    return Status::Ok();
  }

  sqlite3* db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* del_ = nullptr;
  sqlite3_stmt* meta_ = nullptr;
};

}  // namespace

std::unique_ptr<StateStore> NewMemoryStateStore() { return std::make_unique<MemoryStateStore>(); }

Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error::IoError("cannot create data dir " + dir + ": " + ec.message());
  std::string path = (std::filesystem::path(dir) / "simulator.db").string();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error::IoError("cannot open " + path + ": " + m);
  }
  sqlite3_busy_timeout(db, 5000);
  auto store = std::make_unique<SqliteStateStore>(db);
  HCPRP_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace hcprp::simulator
