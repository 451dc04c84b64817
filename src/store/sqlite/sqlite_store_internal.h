// Private to the SQLite engine: the store class and what its parts (opening, reads, writes, group
// commit, change feed, leases) share. Not for use outside src/store/sqlite.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "store/document_logic.h"
#include "store/engine_store.h"
#include "store/sqlite/change_watcher.h"
#include "store/sqlite/connection.h"
#include "store/sqlite/sql.h"

namespace hcprp::store::sqlite {

using internal::DocName;
using internal::LeaseName;
using internal::LeaseState;
using internal::Printable;
using internal::StoredRow;
using internal::Version;

constexpr size_t kMaxReaders = 32;

struct Target {
  std::string path;  // ":memory:" for the in-memory database
  std::string vfs;
  bool memory = false;
};

// A write transaction in progress on the writer connection, and the row and lease primitives of
// engine_store.h on it (in sqlite_store_writes.cpp and sqlite_store_leases.cpp).
struct Tx final : internal::EngineTx {
  Tx(Connection& conn, int64_t at) : c(conn), now(at) {}

  Connection& c;
  const int64_t now;
  bool feed_changed = false;

  int64_t Now() const override { return now; }
  Result<std::optional<StoredRow>> LoadRow(std::string_view container, std::string_view pk,
                                           std::string_view id) override;
  Result<bool> InsertRow(std::string_view container, std::string_view pk, std::string_view id,
                         const Version& v) override;
  Result<bool> UpdateRow(std::string_view container, std::string_view pk, std::string_view id,
                         const Version& v, const std::string* required_etag) override;
  Result<std::optional<StoredRow>> DeleteRow(std::string_view container, std::string_view pk,
                                             std::string_view id, const std::string* required_etag) override;
  Status DeleteAnyRow(std::string_view container, std::string_view pk, std::string_view id) override;
  Status AppendChange(std::string_view container, int kind, std::string_view pk, std::string_view id,
                      std::string body, std::string etag, int64_t ts,
                      const std::optional<int64_t>& ttl) override;
  Result<std::optional<LeaseState>> LoadLease(std::string_view container, std::string_view pk,
                                              std::string_view name) override;
  Result<std::optional<uint64_t>> TakeLease(const Lease& lease, int64_t expires_at,
                                            std::string& holder) override;
  Result<std::optional<LeaseState>> ExtendLease(const Lease& lease, std::string_view new_etag,
                                                int64_t expires_at) override;
  Result<bool> DropLease(const Lease& lease) override;
};

#define HCPRP_ASSIGN_STMT(var, conn, sql)                                    \
  HCPRP_ASSIGN_OR_RETURN(sqlite3_stmt* var##_prepared, (conn).Prepare(sql)); \
  Stmt var((conn).db(), var##_prepared)

// The statement's current row with columns body, etag, ts, ttl (and expires_at) (in
// sqlite_store_writes.cpp).
StoredRow CurrentRow(Stmt& s, bool with_expiry);

// Records a change of `container` in the change feed (in sqlite_store_writes.cpp).
Status InsertChange(Tx& tx, std::string_view container, int kind, std::string_view pk, std::string_view id,
                    std::string_view body, std::string_view etag, int64_t ts,
                    const std::optional<int64_t>& ttl);

class SqliteStore final : public internal::EngineStore {
 public:
  static Result<std::unique_ptr<Store>> Open(Target target, const OpenOptions& options);
  ~SqliteStore() override;

  Result<size_t> PurgeExpired() override;

 protected:
  // SQLite never reruns a transaction's body: a write that fails is rolled back and reported.
  Status InWriteTransaction(std::string_view what,
                            const std::function<Status(internal::EngineTx&)>& body) override;
  Result<std::optional<StoredRow>> ReadLive(std::string_view container, std::string_view pk,
                                            std::string_view id, int64_t now) override;
  Status RunQuery(const QueryOptions& options, const internal::QueryPlan& plan,
                  internal::PageBuilder& page) override;
  Status PartitionsAfter(std::string_view container, const std::optional<std::string>& after, int64_t now,
                         int64_t limit, internal::PageBuilder& page) override;
  Result<internal::FeedRead> ChangesAfter(std::string_view container, std::optional<uint64_t> position,
                                          bool resumed, size_t max_changes) override;
  Result<bool> WaitAfter(std::string_view container, std::optional<uint64_t> position,
                         std::chrono::steady_clock::time_point deadline) override;

 private:
  SqliteStore(Target target, const OpenOptions& options, internal::DocumentIndexer indexer,
              std::unique_ptr<Connection> writer)
      : EngineStore(options.clock, std::move(indexer), /*reruns=*/false),
        target_(std::move(target)),
        options_(options),
        writer_(std::move(writer)) {}

  static Status InitDatabase(Connection& c, const Target& t);
  Result<std::unique_ptr<Connection>> OpenReader();

  // Runs `body(Tx&)` in a write transaction and returns once that transaction has committed (or
  // failed). Group commit: concurrent writes share one transaction (BEGIN IMMEDIATE .. COMMIT, one
  // sync), each inside its own savepoint, so a write that fails is undone alone and the others
  // still commit; no caller returns before the shared COMMIT has returned (synchronous=FULL: the
  // WAL is synced). When SQLite ends the whole transaction (an I/O error, a full disk) every
  // member applied so far fails with that error and the rest of the group runs in a new one.
  template <typename T, typename Body>
  Result<T> WriteTx(std::string_view what, Body&& body);
  void Rollback(Connection& c);

  // A write waiting for a group commit; lives in the submitting thread's frame.
  struct PendingWrite {
    std::string_view what;
    std::function<Status(Tx&)> run;  // applies the write; its result stays in the caller's frame
    // Set by the leader before `done`.
    Status outcome = Status::Ok();
    std::exception_ptr exception;
    bool feed_changed = false;
    bool done = false;  // under group_mu_ (of the store)
    // Notified (under group_mu_) when `done` is set, and when this write is first in line and no
    // thread leads: each waiting thread is woken for itself, not all of them at every commit.
    CondVar woken;
  };
  void SubmitWrite(PendingWrite& w);
  // Commits `group` (holding write_mu_); true when a committed member wrote to the change feed.
  bool RunGroup(const std::vector<PendingWrite*>& group);
  static Status Exec(Connection& c, const char* statement, std::string_view what);

  // Runs `f(Connection&)` on a reader connection (the writer connection for an in-memory store).
  template <typename F>
  auto WithReader(F&& f) -> decltype(f(std::declval<Connection&>()));

  Result<uint64_t> MaxSeq(Connection& c, std::string_view container);
  // Removes changes older than OpenOptions::change_retention (part of PurgeExpired).
  Status TrimChanges();
  Result<bool> HasChangesAfter(std::string_view container, uint64_t seq);

  void NotifyChanged();
  void EnsureWatcher();

  // Checkpoints run on their own thread and connection, so that no group commit pays for copying the
  // WAL back into the database file (SQLite's automatic checkpoint runs inside the COMMIT that crosses
  // its threshold, with every writer of the group waiting). Started for file stores only.
  Status StartCheckpointer();
  void CheckpointLoop();
  // Called by SQLite on the writer connection after each commit, with the WAL's size in pages.
  static int WalHook(void* self, sqlite3* db, const char* schema, int pages);

  // Constant after construction.
  const Target target_;
  const OpenOptions options_;

  Mutex group_mu_;
  std::deque<PendingWrite*> queue_ HCPRP_GUARDED_BY(group_mu_);  // writes not yet taken by a leader
  bool leading_ HCPRP_GUARDED_BY(group_mu_) = false;             // a thread is committing a group

  Mutex write_mu_;
  std::unique_ptr<Connection> writer_ HCPRP_GUARDED_BY(write_mu_);

  Mutex pool_mu_;
  CondVar pool_cv_;
  std::vector<std::unique_ptr<Connection>> idle_readers_ HCPRP_GUARDED_BY(pool_mu_);
  size_t open_readers_ HCPRP_GUARDED_BY(pool_mu_) = 0;

  Mutex notify_mu_;
  CondVar notify_cv_;
  uint64_t generation_ HCPRP_GUARDED_BY(notify_mu_) = 0;  // bumped after every commit seen
  std::atomic<int> waiters_{0};

  Mutex watcher_mu_;
  std::unique_ptr<ChangeWatcher> watcher_ HCPRP_GUARDED_BY(watcher_mu_);  // started by the first wait
  bool watcher_failed_ HCPRP_GUARDED_BY(watcher_mu_) = false;

  std::unique_ptr<Connection> checkpoint_conn_;  // used by the checkpointer thread only
  Mutex checkpoint_mu_;
  CondVar checkpoint_cv_;
  bool checkpoint_due_ HCPRP_GUARDED_BY(checkpoint_mu_) = false;
  bool checkpoint_stop_ HCPRP_GUARDED_BY(checkpoint_mu_) = false;
  std::thread checkpointer_;
};

template <typename F>
auto SqliteStore::WithReader(F&& f) -> decltype(f(std::declval<Connection&>())) {
  if (target_.memory) {
    MutexLock lk(write_mu_);
    return f(*writer_);
  }
  std::unique_ptr<Connection> conn;
  {
    MutexLock lk(pool_mu_);
    pool_cv_.Wait(
        lk, [&]() HCPRP_REQUIRES(pool_mu_) { return !idle_readers_.empty() || open_readers_ < kMaxReaders; });
    if (!idle_readers_.empty()) {
      conn = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    } else {
      ++open_readers_;
    }
  }
  if (!conn) {
    auto opened = OpenReader();
    if (!opened.ok()) {
      {
        MutexLock lk(pool_mu_);
        --open_readers_;
      }
      pool_cv_.NotifyOne();
      return opened.error();
    }
    conn = std::move(*opened);
  }
  struct GiveBack {  // also on exceptions; never pools a connection inside a transaction
    SqliteStore& self;
    std::unique_ptr<Connection>& conn;
    ~GiveBack() {
      if (!sqlite3_get_autocommit(conn->db())) self.Rollback(*conn);
      {
        MutexLock lk(self.pool_mu_);
        if (sqlite3_get_autocommit(conn->db())) {
          self.idle_readers_.push_back(std::move(conn));
        } else {
          --self.open_readers_;  // could not end its transaction: drop it
        }
      }
      self.pool_cv_.NotifyOne();
    }
  } give_back{*this, conn};
  return f(*conn);
}

template <typename T, typename Body>
Result<T> SqliteStore::WriteTx(std::string_view what, Body&& body) {
  Result<T> result = Error::Internal("write not run");
  PendingWrite w;
  w.what = what;
  w.run = [&](Tx& tx) -> Status {
    result = body(tx);
    if (!result.ok()) return result.error();
    return Status::Ok();
  };
  SubmitWrite(w);
  if (w.exception) std::rethrow_exception(w.exception);
  HCPRP_RETURN_IF_ERROR(w.outcome);
  return result;
}

}  // namespace hcprp::store::sqlite
