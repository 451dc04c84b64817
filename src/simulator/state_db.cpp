#include "simulator/state_db.h"

#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "core/mutex.h"

namespace hcprp::simulator {
namespace {

class SqliteStateDb final : public StateDb {
 public:
  SqliteStateDb(std::string dir, sqlite3* db) : StateDb(std::move(dir)), db_(db) {}
  ~SqliteStateDb() override {
    {
      MutexLock lock(ckpt_mu_);
      ckpt_stop_ = true;
    }
    ckpt_cv_.NotifyAll();
    if (checkpointer_.joinable()) checkpointer_.join();
    sqlite3_close(ckpt_db_);
    sqlite3_finalize(put_);
    sqlite3_finalize(del_);
    sqlite3_close(db_);
  }

  // Checkpoints run on their own thread and connection, so that a commit never pays for copying the
  // WAL back into the database (SQLite's automatic checkpoint runs inside the commit that crosses its
  // threshold). The writer checkpoints itself only when the WAL grows far beyond the threshold.
  Status StartCheckpointer(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &ckpt_db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      return Error::IoError("cannot open " + path +
                            " for checkpoints: " + (ckpt_db_ ? sqlite3_errmsg(ckpt_db_) : "out of memory"));
    }
    sqlite3_busy_timeout(ckpt_db_, 5000);
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA wal_autocheckpoint=0"));
    sqlite3_wal_hook(db_, &SqliteStateDb::WalHook, this);
    checkpointer_ = std::thread([this] { CheckpointLoop(); });
    return Status::Ok();
  }

  Status Init() {
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL"));
    // docs/architecture.md (crash analysis) argues why NORMAL is enough: in WAL mode a commit is
    // atomic either way; NORMAL may lose the last commits on power loss, never on a process crash.
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA synchronous=NORMAL"));
    // Every engine step rewrites a few documents spread over the whole table: keep the pages in memory
    // (64 MiB of cache, reads through a mapping) rather than reading them back for each commit.
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA cache_size=-65536"));
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA mmap_size=1073741824"));
    HCPRP_RETURN_IF_ERROR(
        Exec("CREATE TABLE IF NOT EXISTS docs(space TEXT NOT NULL, key TEXT NOT NULL, doc TEXT NOT NULL, "
             "PRIMARY KEY(space, key))"));
    HCPRP_RETURN_IF_ERROR(ConvertOldTables());
    HCPRP_RETURN_IF_ERROR(
        Prepare("INSERT INTO docs(space, key, doc) VALUES(?1, ?2, ?3) "
                "ON CONFLICT(space, key) DO UPDATE SET doc = excluded.doc",
                &put_));
    HCPRP_RETURN_IF_ERROR(Prepare("DELETE FROM docs WHERE space = ?1 AND key = ?2", &del_));
    return Status::Ok();
  }

  Result<std::vector<std::pair<std::string, std::string>>> Load(std::string_view space) override {
    MutexLock lock(mu_);
    std::vector<std::pair<std::string, std::string>> out;
    sqlite3_stmt* st = nullptr;
    HCPRP_RETURN_IF_ERROR(Prepare("SELECT key, doc FROM docs WHERE space = ?1 ORDER BY key", &st));
    sqlite3_bind_text(st, 1, space.data(), static_cast<int>(space.size()), SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                       reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return Err("reading " + std::string(space));
    return out;
  }

  // Group commit: batches committed at the same time share one transaction (the first caller to find
  // no transaction running writes every batch queued by then, in the order queued); each caller learns
  // the shared outcome. The batches carry no preconditions, so one outcome serves them all.
  Status Commit(const StateBatch& batch) override {
    if (batch.empty()) return Status::Ok();
    Waiter me{&batch};
    MutexLock lock(queue_mu_);
    queue_.push_back(&me);
    while (!me.done) {
      if (writing_) {
        queue_cv_.Wait(lock);
        continue;
      }
      writing_ = true;
      std::vector<Waiter*> group;
      group.swap(queue_);
      lock.unlock();
      Status st = WriteGroup(group);
      lock.lock();
      for (Waiter* w : group) {
        w->status = st;
        w->done = true;
      }
      writing_ = false;
      queue_cv_.NotifyAll();
    }
    return me.status;
  }

  uint64_t commits() const override { return commits_.load(std::memory_order_relaxed); }

 private:
  struct Waiter {
    const StateBatch* batch;
    Status status = Status::Ok();
    bool done = false;
  };

  // One transaction for every batch of `group`; nothing is written when it fails.
  Status WriteGroup(const std::vector<Waiter*>& group) {
    MutexLock lock(mu_);
    HCPRP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    auto fail = [&](const char* what) {
      Error e = Err(what);
      sqlite3_clear_bindings(put_);
      sqlite3_clear_bindings(del_);
      (void)Exec("ROLLBACK");
      return e;
    };
    for (const Waiter* w : group) {
      for (const auto& c : w->batch->changes()) {
        // The batch outlives the statement's use of its strings: bound without copies, cleared below.
        sqlite3_stmt* st = c.doc ? put_ : del_;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, c.space.data(), static_cast<int>(c.space.size()), SQLITE_STATIC);
        sqlite3_bind_text(st, 2, c.key.data(), static_cast<int>(c.key.size()), SQLITE_STATIC);
        if (c.doc) sqlite3_bind_text(st, 3, c.doc->data(), static_cast<int>(c.doc->size()), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
          return fail(c.doc ? "writing a document" : "deleting a document");
      }
    }
    sqlite3_reset(put_);
    sqlite3_reset(del_);
    sqlite3_clear_bindings(put_);
    sqlite3_clear_bindings(del_);
    Status st = Exec("COMMIT");
    if (!st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
    commits_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }

  // WAL pages after which the checkpointer copies them back, and after which the writer does it itself.
  static constexpr int kCheckpointPages = 4096;
  static constexpr int kWriterCheckpointPages = 16 * kCheckpointPages;

  // Called by SQLite on the writer's connection after each commit, with the WAL's size in pages.
  static int WalHook(void* self, sqlite3* db, const char* schema, int pages) {
    auto* me = static_cast<SqliteStateDb*>(self);
    if (pages >= kWriterCheckpointPages) {
      (void)sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    } else if (pages >= kCheckpointPages) {
      {
        MutexLock lock(me->ckpt_mu_);
        me->ckpt_due_ = true;
      }
      me->ckpt_cv_.NotifyOne();
    }
    return SQLITE_OK;
  }

  void CheckpointLoop() {
    MutexLock lock(ckpt_mu_);
    for (;;) {
      ckpt_cv_.Wait(lock, [&]() HCPRP_REQUIRES(ckpt_mu_) { return ckpt_due_ || ckpt_stop_; });
      if (ckpt_stop_) return;
      ckpt_due_ = false;
      lock.unlock();
      // PASSIVE: copies what it can without blocking the writer; the next commit after a complete
      // checkpoint starts the WAL from its beginning again.
      (void)sqlite3_wal_checkpoint_v2(ckpt_db_, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      lock.lock();
    }
  }

  // The simulator's objects and event sequence were kept in tables of their own before; they move to
  // the spaces "object" and "meta" once.
  Status ConvertOldTables() {
    sqlite3_stmt* st = nullptr;
    HCPRP_RETURN_IF_ERROR(Prepare(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('objects', 'meta')", &st));
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (n == 0) return Status::Ok();
    HCPRP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Status s = Exec(
        "CREATE TABLE IF NOT EXISTS objects(href TEXT PRIMARY KEY, doc TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT OR REPLACE INTO docs(space, key, doc) SELECT 'object', href, doc FROM objects;"
        "INSERT OR REPLACE INTO docs(space, key, doc) SELECT 'meta', key, value FROM meta;"
        "DROP TABLE objects; DROP TABLE meta;");
    if (!s.ok()) {
      (void)Exec("ROLLBACK");
      return s;
    }
    return Exec("COMMIT");
  }

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

  Mutex mu_;
  sqlite3* db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* del_ = nullptr;
  std::atomic<uint64_t> commits_{0};
  Mutex queue_mu_;  // before mu_
  CondVar queue_cv_;
  std::vector<Waiter*> queue_ HCPRP_GUARDED_BY(queue_mu_);  // batches waiting for the next transaction
  bool writing_ HCPRP_GUARDED_BY(queue_mu_) = false;        // a transaction is being written
  sqlite3* ckpt_db_ = nullptr;                              // the checkpointer's own connection
  std::thread checkpointer_;
  Mutex ckpt_mu_;
  CondVar ckpt_cv_;
  bool ckpt_due_ HCPRP_GUARDED_BY(ckpt_mu_) = false;
  bool ckpt_stop_ HCPRP_GUARDED_BY(ckpt_mu_) = false;
};

}  // namespace

Result<std::unique_ptr<StateDb>> StateDb::Open(const std::string& dir) {
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
  auto state = std::make_unique<SqliteStateDb>(dir, db);
  HCPRP_RETURN_IF_ERROR(state->Init());
  HCPRP_RETURN_IF_ERROR(state->StartCheckpointer(path));
  return std::unique_ptr<StateDb>(std::move(state));
}

}  // namespace hcprp::simulator
