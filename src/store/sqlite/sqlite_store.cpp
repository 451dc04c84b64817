// Opening an SQLite store: the URL, the schema, the reader connections.
#include "store/sqlite/sqlite_store.h"

#include "core/url_encoding.h"
#include "store/sqlite/sqlite_store_internal.h"

namespace hcprp::store::sqlite {
namespace {

Result<Target> ParseUrl(std::string_view url) {
  Target t;
  std::string_view rest = url;
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest == "sqlite::memory:") {
    t.memory = true;
    t.path = ":memory:";
  } else if (rest.substr(0, 10) == "sqlite:///") {
    HCPRP_ASSIGN_OR_RETURN(auto path, PercentDecode(rest.substr(9)));
    if (path.size() < 2 || path.back() == '/') {
      return Error::InvalidArgument("store URL \"" + std::string(url) + "\" does not name a file");
    }
    if (path.find('\0') != std::string::npos) return Error::InvalidArgument("store URL has a NUL byte");
    t.path = std::move(path);
  } else {
    return Error::InvalidArgument("bad SQLite store URL \"" + std::string(url) +
                                  "\": expected sqlite:///absolute/path.db or sqlite::memory:");
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    HCPRP_ASSIGN_OR_RETURN(
        auto value, PercentDecode(eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1)));
    if (key == "vfs") {
      if (sqlite3_vfs_find(value.c_str()) == nullptr) {
        return Error::InvalidArgument("store URL names an unknown SQLite VFS \"" + value + "\"");
      }
      t.vfs = std::move(value);
    } else {
      return Error::InvalidArgument("unknown store URL parameter \"" + std::string(key) + "\"");
    }
  }
  return t;
}

}  // namespace

Result<std::unique_ptr<Store>> SqliteStore::Open(Target target, const OpenOptions& options) {
  HCPRP_ASSIGN_OR_RETURN(auto indexer, internal::DocumentIndexer::Make(options.indexes));
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (target.memory) flags |= SQLITE_OPEN_MEMORY;
  HCPRP_ASSIGN_OR_RETURN(auto writer, Connection::Open(target.path, target.vfs, flags, options.busy_timeout));
  // SQLite falls back to read-only when the file cannot be written; a store that cannot write is an
  // error at start-up, not a process that answers every write 503.
  if (!target.memory && sqlite3_db_readonly(writer->db(), "main") == 1) {
    return Error::IoError(
        "the store file " + target.path +
        " is read-only (file permissions or a read-only file system); hcprp needs to write it");
  }
  Status init = InitDatabase(*writer, target);
  if (!init.ok()) {
    if (init.error().code() != ErrorCode::kUnavailable) return init.error();
    return Error::Unavailable(init.error().message() +
                              " (still locked by another connection after the busy timeout of " +
                              std::to_string(options.busy_timeout.count()) + " ms)");
  }
  std::unique_ptr<SqliteStore> s(
      new SqliteStore(std::move(target), options, std::move(indexer), std::move(writer)));
  if (!s->target_.memory) HCPRP_RETURN_IF_ERROR(s->StartCheckpointer());
  if (options.purge_interval.count() > 0) s->StartSweeper(options.purge_interval);
  return std::unique_ptr<Store>(std::move(s));
}

Status SqliteStore::InitDatabase(Connection& c, const Target& t) {
  std::string where = "open " + t.path;
  if (!t.memory) {
    HCPRP_ASSIGN_OR_RETURN(auto mode, c.QueryText("PRAGMA journal_mode=WAL", where));
    if (mode != "wal") return Error::IoError(where + ": cannot use WAL (journal mode is \"" + mode + "\")");
  }
  HCPRP_RETURN_IF_ERROR(
      c.Exec("PRAGMA synchronous=FULL; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16384", where));
  HCPRP_RETURN_IF_ERROR(c.Exec("BEGIN IMMEDIATE", where));
  auto check = [&]() -> Status {
    HCPRP_ASSIGN_OR_RETURN(auto app, c.QueryInt("PRAGMA application_id", where));
    HCPRP_ASSIGN_OR_RETURN(auto version, c.QueryInt("PRAGMA user_version", where));
    HCPRP_ASSIGN_OR_RETURN(auto objects, c.QueryInt("SELECT count(*) FROM sqlite_schema", where));
    if (app == sql::kApplicationId) {
      if (version > sql::kSchemaVersion) {
        return Error::InvalidArgument(where + ": the store has schema version " + std::to_string(version) +
                                      ", newer than this binary's " + std::to_string(sql::kSchemaVersion));
      }
    } else if (app != 0 || objects != 0) {
      return Error::InvalidArgument(where + ": the file is an SQLite database but not an hcprp store");
    }
    if (app != sql::kApplicationId || version < sql::kSchemaVersion) {
      HCPRP_RETURN_IF_ERROR(c.Exec(sql::kSchema, where + ": create schema"));
      std::string pragmas = "PRAGMA application_id=" + std::to_string(sql::kApplicationId) +
                            "; PRAGMA user_version=" + std::to_string(sql::kSchemaVersion);
      HCPRP_RETURN_IF_ERROR(c.Exec(pragmas.c_str(), where));
    }
    return c.Exec("COMMIT", where);
  };
  Status st = check();
  if (!st.ok() && !sqlite3_get_autocommit(c.db())) (void)c.Exec("ROLLBACK", where);
  return st;
}

Result<std::unique_ptr<Connection>> SqliteStore::OpenReader() {
  HCPRP_ASSIGN_OR_RETURN(
      auto c, Connection::Open(target_.path, target_.vfs, SQLITE_OPEN_READWRITE, options_.busy_timeout));
  // 4 MiB of page cache per reader (up to kMaxReaders of them); the OS page cache is shared. No mmap:
  // with mmap an I/O error would be a SIGBUS instead of a failed call.
  HCPRP_RETURN_IF_ERROR(
      c->Exec("PRAGMA query_only=1; PRAGMA cache_size=-4096", "open reader " + target_.path));
  return c;
}

SqliteStore::~SqliteStore() {
  StopSweeper();
  {
    MutexLock lk(checkpoint_mu_);
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.NotifyAll();
  if (checkpointer_.joinable()) checkpointer_.join();
  checkpoint_conn_.reset();
  MutexLock lk(watcher_mu_);
  watcher_.reset();
}

Result<std::unique_ptr<Store>> OpenSqliteStore(std::string_view url, const OpenOptions& options) {
  if (options.clock == nullptr) return Error::InvalidArgument("OpenOptions::clock is required");
  HCPRP_ASSIGN_OR_RETURN(auto target, ParseUrl(url));
  return SqliteStore::Open(std::move(target), options);
}
}  // namespace hcprp::store::sqlite
