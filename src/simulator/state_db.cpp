#include "simulator/state_db.h"

#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "core/mutex.h"
#include "store/sqlite/connection.h"

namespace hcprp::simulator {
namespace {

using store::sqlite::Connection;
using store::sqlite::SqliteError;
using store::sqlite::Stmt;

constexpr std::chrono::milliseconds kBusyTimeout{5000};

constexpr const char* kPutSql =
    "INSERT INTO docs(space, key, doc) VALUES(?1, ?2, ?3) ON CONFLICT(space, key) DO UPDATE SET doc = "
    "excluded.doc";
constexpr const char* kDeleteSql = "DELETE FROM docs WHERE space = ?1 AND key = ?2";
constexpr const char* kLoadSql = "SELECT key, doc FROM docs WHERE space = ?1 ORDER BY key";

class SqliteStateDb final : public StateDb {
 public:
  SqliteStateDb(std::string dir, std::unique_ptr<Connection> db)
      : StateDb(std::move(dir)), db_(std::move(db)) {}
  ~SqliteStateDb() override {
    {
      MutexLock lock(ckpt_mu_);
      ckpt_stop_ = true;
    }
    ckpt_cv_.NotifyAll();
    if (checkpointer_.joinable()) checkpointer_.join();
    ckpt_db_.reset();
    db_.reset();
  }

  // Checkpoints run on their own thread and connection, so that a commit never pays for copying the
  // WAL back into the database (SQLite's automatic checkpoint runs inside the commit that crosses its
  // threshold). The writer checkpoints itself only when the WAL grows far beyond the threshold.
  Status StartCheckpointer(const std::string& path) {
    HCPRP_ASSIGN_OR_RETURN(ckpt_db_, Connection::Open(path, "", SQLITE_OPEN_READWRITE, kBusyTimeout));
    HCPRP_RETURN_IF_ERROR(Exec("PRAGMA wal_autocheckpoint=0"));
    sqlite3_wal_hook(db_->db(), &SqliteStateDb::WalHook, this);
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
    // Prepared once here, so that a commit never pays for it.
    HCPRP_RETURN_IF_ERROR(db_->Prepare(kPutSql));
    HCPRP_RETURN_IF_ERROR(db_->Prepare(kDeleteSql));
    return Status::Ok();
  }

  Result<std::vector<std::pair<std::string, std::string>>> Load(std::string_view space) override {
    MutexLock lock(mu_);
    std::vector<std::pair<std::string, std::string>> out;
    HCPRP_ASSIGN_OR_RETURN(auto prepared, db_->Prepare(kLoadSql));
    Stmt st(db_->db(), prepared);
    st.BindText(1, space);
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) out.emplace_back(st.Text(0), st.Text(1));
    if (rc != SQLITE_DONE)
      return SqliteError(db_->db(), rc, "simulator state: reading " + std::string(space));
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
    Status st = WriteChanges(group);
    if (st.ok()) st = Exec("COMMIT");
    if (!st.ok()) {
      (void)Exec("ROLLBACK");
      return st;
    }
    commits_.fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }

  // The changes of every batch of `group`, inside the transaction WriteGroup began.
  Status WriteChanges(const std::vector<Waiter*>& group) HCPRP_REQUIRES(mu_) {
    HCPRP_ASSIGN_OR_RETURN(auto put, db_->Prepare(kPutSql));
    HCPRP_ASSIGN_OR_RETURN(auto del, db_->Prepare(kDeleteSql));
    for (const Waiter* w : group) {
      for (const auto& c : w->batch->changes()) {
        // The batch outlives the statement's use of its strings: bound without copies.
        Stmt st(db_->db(), c.doc ? put : del);
        st.BindText(1, c.space);
        st.BindText(2, c.key);
        if (c.doc) st.BindText(3, *c.doc);
        int rc = st.Step();
        if (rc != SQLITE_DONE) {
          return SqliteError(
              db_->db(), rc,
              c.doc ? "simulator state: writing a document" : "simulator state: deleting a document");
        }
      }
    }
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
      (void)sqlite3_wal_checkpoint_v2(ckpt_db_->db(), "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      lock.lock();
    }
  }

  // The simulator's objects and event sequence were kept in tables of their own before; they move to
  // the spaces "object" and "meta" once.
  Status ConvertOldTables() {
    HCPRP_ASSIGN_OR_RETURN(
        int64_t n,
        db_->QueryInt(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('objects', 'meta')",
            "simulator state: looking for old tables"));
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

  Status Exec(const char* sql) { return db_->Exec(sql, std::string("simulator state: ") + sql); }

  Mutex mu_;                        // serialises the use of db_ once open
  std::unique_ptr<Connection> db_;  // the writer: every read and write
  std::atomic<uint64_t> commits_{0};
  Mutex queue_mu_;  // before mu_
  CondVar queue_cv_;
  std::vector<Waiter*> queue_ HCPRP_GUARDED_BY(queue_mu_);  // batches waiting for the next transaction
  bool writing_ HCPRP_GUARDED_BY(queue_mu_) = false;        // a transaction is being written
  std::unique_ptr<Connection> ckpt_db_;                     // the checkpointer's own connection
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
  HCPRP_ASSIGN_OR_RETURN(
      auto db, Connection::Open(path, "", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, kBusyTimeout));
  auto state = std::make_unique<SqliteStateDb>(dir, std::move(db));
  HCPRP_RETURN_IF_ERROR(state->Init());
  HCPRP_RETURN_IF_ERROR(state->StartCheckpointer(path));
  return std::unique_ptr<StateDb>(std::move(state));
}

}  // namespace hcprp::simulator
