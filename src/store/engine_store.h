// The common base of the store engines (not part of the store's public interface; callers use
// store.h). EngineStore implements the public Store members once: the argument checks, point writes
// as one-operation batches, a batch's fence and operations (engine_core.h's ApplyWrite) inside the
// engine's write transaction, the assembly of documents, query and partition pages and change pages,
// and the lease decisions. An engine implements only the protected hooks below, each a statement or
// two of its own SQL: where the rows are, how a transaction runs, how a waiter is woken.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"
#include "core/result.h"
#include "store/document_logic.h"
#include "store/engine_core.h"
#include "store/store.h"

namespace hcprp::store::internal {

// One write transaction of an engine: its document rows (RowTx) and its leases.
class EngineTx : public RowTx {
 public:
  // The stored state of a lease; nullopt when it was never taken. An engine with concurrent writers
  // keeps it from changing until the transaction ends (a fenced batch reads it).
  virtual Result<std::optional<LeaseState>> LoadLease(std::string_view container, std::string_view pk,
                                                      std::string_view name) = 0;
  // Gives `lease` (owner, etag) to its owner until `expires_at` unless another holds it unexpired:
  // the new fencing token (one above the last one given for that name), or nullopt with `holder` set
  // to the printable name of whoever holds it.
  virtual Result<std::optional<uint64_t>> TakeLease(const Lease& lease, int64_t expires_at,
                                                    std::string& holder) = 0;
  // Moves the unexpired lease whose etag is `lease.etag` to `new_etag` and `expires_at`: its owner and
  // fencing token (expires_at as given), or nullopt when no such lease is held.
  virtual Result<std::optional<LeaseState>> ExtendLease(const Lease& lease, std::string_view new_etag,
                                                        int64_t expires_at) = 0;
  // Releases the lease whose etag is `lease.etag` (the fencing counter stays); false when there is
  // none.
  virtual Result<bool> DropLease(const Lease& lease) = 0;
};

// The changes a feed read found: in sequence order, and the position after the last one read
// (superseded versions stepped over included).
struct FeedRead {
  std::vector<Change> changes;
  uint64_t end = 0;
};

class EngineStore : public PointWritesAsBatches {
 public:
  Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) final;
  Result<Document> ReadText(std::string_view container, std::string_view pk, std::string_view id) final;
  Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                            const Lease* fence) final;
  Result<QueryPage> Query(const QueryOptions& options) final;
  Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                   std::string_view continuation) final;
  Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                 size_t max_changes) final;
  Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                              std::chrono::milliseconds timeout) final;
  Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                             std::string_view owner, std::chrono::milliseconds ttl) final;
  Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) final;
  Status ReleaseLease(const Lease& lease) final;

 protected:
  // `reruns`: the engine may run a write transaction's body again after a retryable failure, so the
  // operations it applies are copied, not consumed. `indexer` fills the indexed fields of every
  // version written and decides which query filters are allowed.
  EngineStore(const Clock* clock, DocumentIndexer indexer, bool reruns)
      : clock_(clock), indexer_(std::move(indexer)), reruns_(reruns) {}

  // Runs `body` in one write transaction of the engine, which commits when it returns OK (and the
  // commit is durable before this returns) and rolls back otherwise; returns the body's error or
  // the transaction's own. The transaction's Now() is the store clock's time, read once.
  virtual Status InWriteTransaction(std::string_view what, const std::function<Status(EngineTx&)>& body) = 0;

  // The live (unexpired at `now`) row of a document, nullopt when there is none.
  virtual Result<std::optional<StoredRow>> ReadLive(std::string_view container, std::string_view pk,
                                                    std::string_view id, int64_t now) = 0;
  // Runs the query of `plan` (at most plan.limit rows in (pk, id) order) and adds its rows to
  // `page` until AddDocument says the page is full.
  virtual Status RunQuery(const QueryOptions& options, const QueryPlan& plan, PageBuilder& page) = 0;
  // Adds to `page`, in bytewise order after `after` (nullopt: from the first), the partition keys of
  // `container` that hold a document live at `now`, until AddPartition says the page is full. Reads
  // at most `limit` partition keys (one more than the page holds) when the engine reads a range.
  virtual Status PartitionsAfter(std::string_view container, const std::optional<std::string>& after,
                                 int64_t now, int64_t limit, PageBuilder& page) = 0;
  // Up to `max_changes` changes of `container` after `position` (nullopt: after everything
  // committed so far). `resumed`: the caller gave a continuation (not ""), so a read behind changes
  // removed by retention fails (FeedPositionExpired) instead of starting at the oldest change kept.
  virtual Result<FeedRead> ChangesAfter(std::string_view container, std::optional<uint64_t> position,
                                        bool resumed, size_t max_changes) = 0;
  // Blocks until `container` has a change after `position` (nullopt: after everything committed so
  // far) or `deadline` passes; true when it has.
  virtual Result<bool> WaitAfter(std::string_view container, std::optional<uint64_t> position,
                                 std::chrono::steady_clock::time_point deadline) = 0;

  // A background thread that calls PurgeExpired() every `interval` (a failure, such as a busy
  // database or a server that is down, is retried at the next one). An engine starts it once open
  // and stops it in its destructor before anything PurgeExpired uses is torn down.
  void StartSweeper(std::chrono::milliseconds interval);
  void StopSweeper();

  // Constant after construction.
  const Clock* const clock_;
  const DocumentIndexer indexer_;

 private:
  void SweepLoop(std::chrono::milliseconds interval);

  Result<Document> WriteOne(std::string_view container, std::string_view pk, WriteOp op) final;
  Result<Document> ReadDocument(std::string_view container, std::string_view pk, std::string_view id,
                                bool body_text);
  // InWriteTransaction for a body with a result.
  template <typename T, typename Body>
  Result<T> Transact(std::string_view what, Body&& body);

  const bool reruns_;

  Mutex sweeper_mu_;
  CondVar sweeper_cv_;
  bool sweeper_stop_ HCPRP_GUARDED_BY(sweeper_mu_) = false;
  std::thread sweeper_;
};

template <typename T, typename Body>
Result<T> EngineStore::Transact(std::string_view what, Body&& body) {
  Result<T> result = Error::Internal(std::string(what) + ": not run");
  HCPRP_RETURN_IF_ERROR(InWriteTransaction(what, [&](EngineTx& tx) -> Status {
    result = body(tx);
    if (!result.ok()) return result.error();
    return Status::Ok();
  }));
  return result;
}

}  // namespace hcprp::store::internal
