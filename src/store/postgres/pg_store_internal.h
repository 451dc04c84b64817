// Private to the PostgreSQL engine: the store class and what its parts (opening and the pool, reads,
// writes, change feed, leases) share. Not for use outside src/store/postgres.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "store/document_logic.h"
#include "store/engine_store.h"
#include "store/postgres/pg_connect_gate.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_sql.h"
#include "store/postgres/pg_store.h"

namespace hcprp::store::postgres {

using internal::DocName;
using internal::LeaseName;
using internal::LeaseState;
using internal::Printable;
using internal::StoredRow;
using internal::Version;
using namespace std::chrono_literals;

constexpr int kTxAttempts = 3;
constexpr int kConnectTimeoutSeconds = 5;
// While connection attempts go unanswered (pg_connect_gate.h), a new one starts this often, and a
// caller that needs a new connection waits at most this long for the gate or an idle connection
// before it fails with kUnavailable. Half of TCP's first SYN retransmission interval (1 s).
constexpr std::chrono::milliseconds kConnectRetryPeriod{500};
// After a connection attempt a server turned down (ConnectGate): the next one starts 100 ms later,
// then 200, 400 and at most 500 ms later while they keep being turned down. A standby being promoted
// gets at most two attempts a second from each process instead of one per call. A call that needs a
// connection meanwhile waits for the outcome of the next attempt (PgStore::Reserve), so the first
// calls after a server is back (from a restart's crash recovery, a promotion) get a session.
constexpr std::chrono::milliseconds kConnectBackoffMin{100};
constexpr std::chrono::milliseconds kConnectBackoffMax = kConnectRetryPeriod;
constexpr int64_t kIdleInTransactionTimeoutMs = 1000;

// The libpq "options" of every connection of a store: search_path, lock_timeout (busy_timeout) and
// idle_in_transaction_session_timeout (kIdleInTransactionTimeoutMs). A client cut off inside a
// transaction (a network partition, its host gone) leaves its session idle in it, holding its row
// locks, until the server finds the connection dead, which its TCP keepalives take hours to do; a
// fenced batch's share lock on a lease row would hold off every takeover of that lease meanwhile. The
// store never waits between the statements of a transaction, so the server ends such a session soon.
std::string ConnectionOptions(std::string_view schema, std::chrono::milliseconds busy_timeout);

// A change recorded by a transaction, numbered when the transaction appends it (see Commit).
struct PendingChange {
  int16_t kind;
  std::string pk, id, body, etag;
  int64_t ts = 0;
  std::optional<int64_t> ttl;
};

// A write transaction in progress, and the row and lease primitives of engine_store.h on it (in
// pg_store_writes.cpp and pg_store_leases.cpp): rows read for a write are locked (FOR UPDATE), and
// changes are buffered until Commit.
struct Tx final : internal::EngineTx {
  Tx(PgConnection& conn, int64_t at) : c(conn), now(at) {}

  PgConnection& c;
  const int64_t now;
  std::map<std::string, std::vector<PendingChange>> changes;  // by container, in bytewise order

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

// Records a change of `container`, inserted by Commit (in pg_store_writes.cpp).
void RecordChange(Tx& tx, std::string_view container, int16_t kind, std::string_view pk, std::string_view id,
                  std::string body, std::string etag, int64_t ts, const std::optional<int64_t>& ttl);

// Ends the transaction of `tx`: inserts its changes, unnumbered (readers number them once committed,
// see pg_store.h), after every document lock was taken, and commits, all in one round trip. A
// transaction that sent nothing ends without a word to the server. (In pg_store_writes.cpp.)
Status Commit(Tx& tx, std::string_view what);

class PgStore final : public internal::EngineStore {
 public:
  static Result<std::unique_ptr<Store>> Open(PgTarget target, const OpenOptions& options);
  ~PgStore() override;

  Result<size_t> PurgeExpired() override;

 protected:
  // Runs `body` in WriteTx, which may run it again after a retryable failure (a serialization
  // failure or deadlock, a switchover): the retry loop is this engine's alone (SQLite never reruns).
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
  PgStore(PgTarget target, const OpenOptions& options, internal::DocumentIndexer indexer);

  // A new connection to the server that takes writes (the one that last did tried first), with
  // `options` (default: conn_options_).
  Result<std::unique_ptr<PgConnection>> Connect(const std::string* options = nullptr);
  static Status Migrate(PgConnection& c, const PgTarget& t, const OpenOptions& options);

  // The pool. Acquire sets `reused` when the connection had been used before. kUnavailable when it
  // needs a new connection and the gate stays closed (Reserve says how long a call waits).
  Result<std::unique_ptr<PgConnection>> Acquire(bool& reused);
  // What Acquire takes under the pool's lock: an idle connection, or a place in the pool and the
  // gate's record of the attempt to fill it.
  struct Reservation {
    std::unique_ptr<PgConnection> idle;
    ConnectGate::Attempt attempt;
  };
  Result<Reservation> Reserve();
  // Why Reserve gives up at `now` when the gate opens only at `opens`.
  Error ConnectGateClosed(ConnectGate::Clock::time_point now, ConnectGate::Clock::time_point opens)
      HCPRP_REQUIRES(pool_mu_);
  // Gives back the place of a connection that was dropped or never opened.
  void Unreserve();
  void Release(std::unique_ptr<PgConnection> c);
  void DropIdle();

  // Runs `f(PgConnection&)` (read-only work); reruns it once on a new connection when a reused one
  // turns out to be dead.
  template <typename F>
  auto WithConn(F&& f) -> decltype(f(std::declval<PgConnection&>()));
  // Runs `body(Tx&)` in a transaction (BEGIN .. changes .. COMMIT); rolls back when it fails, and
  // runs it again (up to kTxAttempts times) after a retryable failure.
  template <typename T, typename Body>
  Result<T> WriteTx(std::string_view what, Body&& body);

  // Removes changes older than OpenOptions::change_retention (part of PurgeExpired).
  Status TrimChanges();
  // Numbers the container's committed, unnumbered changes (a chunk of them, or all for a reader that
  // starts at "now"); returns its last sequence.
  Result<uint64_t> NumberChanges(PgConnection& c, std::string_view container, bool all = false);

  void NotifyChanged();
  // Has the notifier thread send a NOTIFY to the other processes (coalesced).
  void AnnounceCommit();
  void NotifierLoop();
  void EnsureListener();
  void ListenLoop();

  // Constant after construction.
  const PgTarget target_;
  const OpenOptions options_;
  const std::string conn_options_;  // ConnectionOptions()
  const std::string channel_;       // NOTIFY channel of this schema

  HostOrder host_order_;

  Mutex pool_mu_;
  CondVar pool_cv_;
  std::vector<std::unique_ptr<PgConnection>> idle_ HCPRP_GUARDED_BY(pool_mu_);
  size_t open_ HCPRP_GUARDED_BY(pool_mu_) = 0;
  ConnectGate gate_ HCPRP_GUARDED_BY(pool_mu_){kConnectRetryPeriod, kConnectBackoffMin, kConnectBackoffMax};
  std::string last_connect_error_ HCPRP_GUARDED_BY(pool_mu_);  // of the last attempt that failed

  Mutex notify_mu_;
  CondVar notify_cv_;
  uint64_t generation_ HCPRP_GUARDED_BY(notify_mu_) = 0;  // bumped after every commit seen

  Mutex announce_mu_;
  CondVar announce_cv_;
  bool announce_due_ HCPRP_GUARDED_BY(announce_mu_) = false;
  bool announce_stop_ HCPRP_GUARDED_BY(announce_mu_) = false;
  std::thread notifier_ HCPRP_GUARDED_BY(announce_mu_);  // started by the first commit with changes

  Mutex listener_mu_;
  std::thread listener_ HCPRP_GUARDED_BY(listener_mu_);  // started by the first wait
  int wake_pipe_[2] = {-1, -1};  // constant once the listener runs; written to stop it
  std::atomic<bool> stopping_{false};
};

template <typename F>
auto PgStore::WithConn(F&& f) -> decltype(f(std::declval<PgConnection&>())) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    HCPRP_ASSIGN_OR_RETURN(auto c, Acquire(reused));
    auto r = f(*c);
    bool broken = c->broken() && !c->timed_out();  // a stuck server: a new connection won't help
    Release(std::move(c));
    if (!r.ok() && broken && reused && attempt == 0) {
      DropIdle();  // the server went away: the other idle connections are dead too
      continue;
    }
    return r;
  }
}

template <typename T, typename Body>
Result<T> PgStore::WriteTx(std::string_view what, Body&& body) {
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    HCPRP_ASSIGN_OR_RETURN(auto acquired, Acquire(reused));
    std::unique_ptr<PgConnection> c = std::move(acquired);
    // BEGIN travels with the transaction's first statement, and COMMIT with its changes.
    c->DeferBegin(sql::kBegin);
    Tx tx(*c, clock_->NowMillis());
    Result<T> r = body(tx);
    if (!r.ok()) {
      std::string state = c->last_sqlstate();
      const bool broken = c->broken() && !c->timed_out();
      if (c->begin_pending()) {
        c->CancelBegin();
      } else if (!c->broken()) {
        (void)c->Exec(sql::kRollback, Params(), "rollback");
      }
      Release(std::move(c));
      if (broken && reused && attempt == 0) {
        // A pooled connection that the server had closed: nothing was committed (no COMMIT was
        // sent); the pool's other idle connections are as dead.
        DropIdle();
        continue;
      }
      if (IsRetryableSqlstate(state) && attempt + 1 < kTxAttempts) continue;
      if (state == kReadOnlySqlstate && attempt == 0) {
        // This server was demoted (a switchover): nothing was written; the pool's other
        // connections lead there too. A new connection goes to the primary, if there is one yet.
        DropIdle();
        continue;
      }
      return r;
    }
    auto commit = Commit(tx, what);
    if (!commit.ok()) {
      std::string state = c->last_sqlstate();
      if (!c->broken()) (void)c->Exec(sql::kRollback, Params(), "rollback");
      Release(std::move(c));
      if (IsRetryableSqlstate(state) && attempt + 1 < kTxAttempts) continue;
      return commit.error();
    }
    Release(std::move(c));
    if (!tx.changes.empty()) {
      NotifyChanged();
      AnnounceCommit();
    }
    return r;
  }
}

}  // namespace hcprp::store::postgres
