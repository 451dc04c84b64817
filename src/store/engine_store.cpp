#include "store/engine_store.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "core/time.h"

namespace hcprp::store::internal {

Result<Document> EngineStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadDocument(container, pk, id, /*body_text=*/false);
}

Result<Document> EngineStore::ReadText(std::string_view container, std::string_view pk, std::string_view id) {
  return ReadDocument(container, pk, id, /*body_text=*/true);
}

Result<Document> EngineStore::ReadDocument(std::string_view container, std::string_view pk,
                                           std::string_view id, bool body_text) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_ASSIGN_OR_RETURN(auto row, ReadLive(container, pk, id, clock_->NowMillis()));
  if (!row) return Error::NotFound(DocName(container, pk, id) + " does not exist");
  return DocumentFromRow(body_text, pk, id, std::move(*row));
}

Result<Document> EngineStore::WriteOne(std::string_view container, std::string_view pk, WriteOp op) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_RETURN_IF_ERROR(ValidateOp(op));
  std::optional<Version> prepared = PrepareVersion(op, indexer_);
  return Transact<Document>("write", [&](EngineTx& tx) {
    return ApplyWrite(tx, container, pk, op, prepared, /*consume=*/!reruns_, indexer_);
  });
}

Result<BatchResult> EngineStore::Batch(std::string_view container, std::string_view pk,
                                       std::vector<WriteOp> ops, const Lease* fence) {
  HCPRP_RETURN_IF_ERROR(ValidateBatch(container, ops));
  std::vector<std::optional<Version>> prepared;
  prepared.reserve(ops.size());
  for (const WriteOp& op : ops) prepared.push_back(PrepareVersion(op, indexer_));
  return Transact<BatchResult>("batch", [&](EngineTx& tx) -> Result<BatchResult> {
    if (fence != nullptr) {
      HCPRP_ASSIGN_OR_RETURN(auto state, tx.LoadLease(fence->container, fence->partition_key, fence->name));
      HCPRP_RETURN_IF_ERROR(CheckFenceState(*fence, state, tx.Now()));
    }
    BatchResult out;
    out.documents.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      auto d = ApplyWrite(tx, container, pk, ops[i], prepared[i], /*consume=*/!reruns_, indexer_);
      if (!d.ok()) return BatchOperationError(i, d.error());
      out.documents.push_back(std::move(*d));
    }
    return out;
  });
}

Result<QueryPage> EngineStore::Query(const QueryOptions& options) {
  HCPRP_RETURN_IF_ERROR(ValidateQuery(options));
  HCPRP_RETURN_IF_ERROR(indexer_.CheckQuery(options));
  HCPRP_ASSIGN_OR_RETURN(auto plan, PlanQuery(options, clock_->NowMillis()));
  PageBuilder page(options.max_items);
  HCPRP_RETURN_IF_ERROR(RunQuery(options, plan, page));
  return std::move(page).Take();
}

Result<QueryPage> EngineStore::ListPartitions(std::string_view container, size_t max_items,
                                              std::string_view continuation) {
  HCPRP_ASSIGN_OR_RETURN(auto after, ListPartitionsStart(container, max_items, continuation));
  const int64_t limit = static_cast<int64_t>(std::min<size_t>(max_items, INT32_MAX)) + 1;
  PageBuilder page(max_items);
  HCPRP_RETURN_IF_ERROR(PartitionsAfter(container, after, clock_->NowMillis(), limit, page));
  return std::move(page).Take();
}

Result<ChangePage> EngineStore::ReadChanges(std::string_view container, std::string_view continuation,
                                            size_t max_changes) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  if (max_changes == 0) return Error::InvalidArgument("max_changes must be > 0");
  HCPRP_ASSIGN_OR_RETURN(auto position, DecodeChangeContinuation(continuation));
  HCPRP_ASSIGN_OR_RETURN(auto read, ChangesAfter(container, position, !continuation.empty(), max_changes));
  ChangePage page;
  page.changes = std::move(read.changes);
  page.continuation = EncodeChangeContinuation(read.end);
  return page;
}

Result<bool> EngineStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                         std::chrono::milliseconds timeout) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(container));
  HCPRP_ASSIGN_OR_RETURN(auto position, DecodeChangeContinuation(continuation));
  auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  return WaitAfter(container, position, deadline);
}

Result<Lease> EngineStore::AcquireLease(std::string_view container, std::string_view pk,
                                        std::string_view name, std::string_view owner,
                                        std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(ValidateLeaseArgs(container, ttl));
  return Transact<Lease>("acquire lease", [&](EngineTx& tx) -> Result<Lease> {
    Lease l = NewLease(container, pk, name, owner, tx.Now(), ttl);
    std::string holder;
    HCPRP_ASSIGN_OR_RETURN(auto token, tx.TakeLease(l, tx.Now() + ToMillis(ttl), holder));
    if (!token) return LeaseHeld(container, pk, name, holder);
    l.fencing_token = *token;
    return l;
  });
}

Result<Lease> EngineStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  HCPRP_RETURN_IF_ERROR(ValidateLeaseArgs(lease.container, ttl));
  return Transact<Lease>("renew lease", [&](EngineTx& tx) -> Result<Lease> {
    Lease l = lease;
    l.etag = NewEtag();
    HCPRP_ASSIGN_OR_RETURN(auto held, tx.ExtendLease(lease, l.etag, tx.Now() + ToMillis(ttl)));
    if (!held) return LeaseLost(lease, /*renewing=*/true);
    l.owner = std::move(held->owner).value_or("");
    l.fencing_token = held->fencing_token;
    l.expires_at = FromUnixMillis(held->expires_at);
    return l;
  });
}

Status EngineStore::ReleaseLease(const Lease& lease) {
  HCPRP_RETURN_IF_ERROR(CheckContainer(lease.container));
  auto released = Transact<bool>("release lease", [&](EngineTx& tx) -> Result<bool> {
    HCPRP_ASSIGN_OR_RETURN(auto dropped, tx.DropLease(lease));
    if (!dropped) return LeaseLost(lease, /*renewing=*/false);
    return true;
  });
  HCPRP_RETURN_IF_ERROR(std::move(released));
  return Status::Ok();
}

void EngineStore::StartSweeper(std::chrono::milliseconds interval) {
  sweeper_ = std::thread([this, interval] { SweepLoop(interval); });
}

void EngineStore::StopSweeper() {
  {
    MutexLock lk(sweeper_mu_);
    sweeper_stop_ = true;
  }
  sweeper_cv_.NotifyAll();
  if (sweeper_.joinable()) sweeper_.join();
}

void EngineStore::SweepLoop(std::chrono::milliseconds interval) {
  MutexLock lk(sweeper_mu_);
  while (!sweeper_stop_) {
    if (sweeper_cv_.WaitFor(lk, interval, [&]() HCPRP_REQUIRES(sweeper_mu_) { return sweeper_stop_; })) break;
    lk.unlock();
    (void)PurgeExpired();
    lk.lock();
  }
}

}  // namespace hcprp::store::internal
