#include "backend/desired_version_writer.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "backend/documents.h"
#include "clusterservice/update_graph.h"

namespace hcprp::backend {

void ForEachOnThreads(size_t count, size_t threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) fn(i);
  };
  threads = std::min(std::max<size_t>(threads, 1), count);
  std::vector<std::thread> helpers;
  helpers.reserve(threads > 0 ? threads - 1 : 0);
  for (size_t i = 1; i < threads; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

namespace {

store::WriteOp WriteOf(const DesiredWrite& w) {
  json::value body = ServiceProviderCluster{w.href, w.to, w.channel_group}.ToBody();
  std::string id = ServiceProviderClusterId(w.href);
  if (w.etag.empty()) return store::WriteOp::Create(std::move(id), std::move(body));
  return store::WriteOp::Replace(std::move(id), std::move(body), w.etag);
}

}  // namespace

DesiredCommit DesiredVersionWriter::Commit(const std::vector<DesiredWrite>& writes,
                                           const Committed& committed) const {
  const std::vector<std::span<const DesiredWrite>> batches = BatchesOf(writes, max_batch_);
  std::vector<DesiredCommit> outs(batches.size());
  ForEachOnThreads(batches.size(), concurrency_,
                   [&](size_t i) { CommitBatch(batches[i], &outs[i], committed); });
  DesiredCommit all;
  for (DesiredCommit& o : outs) {
    std::move(o.stored.begin(), o.stored.end(), std::back_inserter(all.stored));
    std::move(o.written.begin(), o.written.end(), std::back_inserter(all.written));
    all.failed += o.failed;
    all.batches += o.batches;
  }
  return all;
}

void DesiredVersionWriter::CommitBatch(std::span<const DesiredWrite> batch, DesiredCommit* out,
                                       const Committed& committed) const {
  const std::string& pk = batch.front().partition_key;
  std::vector<DesiredWrite> writes(batch.begin(), batch.end());
  for (int attempt = 1; !writes.empty(); ++attempt) {
    std::optional<store::Lease> fence = ownership_->FenceFor(pk);
    if (!fence) break;  // no longer owned: the owner's pass decides
    std::vector<store::WriteOp> ops;
    ops.reserve(writes.size());
    for (const DesiredWrite& w : writes) ops.push_back(WriteOf(w));
    auto r = store_->Batch(store::kResources, pk, std::move(ops), &*fence);
    if (r.ok()) {
      for (size_t i = 0; i < writes.size(); ++i) {
        out->stored.push_back(StoredDesired{writes[i].href, writes[i].to, r->documents[i].etag});
      }
      if (committed) committed(writes);
      std::move(writes.begin(), writes.end(), std::back_inserter(out->written));
      ++out->batches;
      return;
    }
    const bool lost_race = store::FailedBatchIndex(r.error()).has_value() &&
                           (r.error().IsPreconditionFailed() || r.error().IsAlreadyExists());
    if (!lost_race) {
      if (r.error().IsPreconditionFailed()) ownership_->FenceRefused(*fence);
      break;
    }
    if (attempt == kAttempts) break;
    auto again = Reread(writes, &out->stored);
    if (!again.ok()) break;
    writes = std::move(again).value();
  }
  out->failed += writes.size();
}

Result<std::vector<DesiredWrite>> DesiredVersionWriter::Reread(const std::vector<DesiredWrite>& batch,
                                                               std::vector<StoredDesired>* stored) const {
  std::vector<DesiredWrite> still;
  for (const DesiredWrite& w : batch) {
    DesiredWrite next = w;
    next.etag.clear();
    next.from.clear();
    auto doc = store_->Read(store::kResources, w.partition_key, ServiceProviderClusterId(w.href));
    if (!doc.ok() && !doc.error().IsNotFound()) return doc.error();
    if (doc.ok()) {
      std::optional<ServiceProviderCluster> held = ServiceProviderCluster::FromBody(doc->body);
      next.etag = doc->etag;
      next.from = held ? held->desired_version : std::string();
      stored->push_back(StoredDesired{w.href, next.from, doc->etag});
      if (!next.from.empty() && !clusterservice::NewerThan(w.to, next.from)) continue;
    }
    still.push_back(std::move(next));
  }
  return still;
}

}  // namespace hcprp::backend
