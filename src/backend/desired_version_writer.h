// Commits planned desired versions (version_plan.h) to the service provider cluster documents
// (documents.h) in batches (private to src/backend).
//
// Each batch holds up to `max_batch` writes of one partition, fenced with the lease of the partition's
// shard; batches run on up to `concurrency` threads, so that the store's group commit shares their
// syncs. Each write is conditioned on the etag the plan read (a create when it read none), so a
// concurrent write is never overwritten: a batch that loses a race is read again and retried (at
// most kAttempts times) with the writes that still raise what is stored; a stored version at or
// above the planned one is kept, so a desired version never goes down.
//
// Thread-safe (no state of its own besides what it was given).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend/ownership.h"
#include "backend/version_plan.h"
#include "store/store.h"

namespace hcprp::backend {

// Calls fn(i) for every i < count on up to `threads` threads (the caller's included); returns when
// all are done.
void ForEachOnThreads(size_t count, size_t threads, const std::function<void(size_t)>& fn);

// What the store holds for a cluster after a commit: its desired version and the etag to condition
// the next write on.
struct StoredDesired {
  std::string href;
  std::string desired;
  std::string etag;
};

struct DesiredCommit {
  std::vector<StoredDesired> stored;  // every cluster written, or read again after a lost race
  std::vector<DesiredWrite> written;  // the writes that committed (with the version they wrote)
  size_t failed = 0;                  // writes not committed: not owned, or the store refused
  size_t batches = 0;                 // committed batches
};

class DesiredVersionWriter {
 public:
  static constexpr int kAttempts = 3;

  // Not owned; both must outlive this.
  DesiredVersionWriter(store::Store* store, Ownership* ownership, size_t max_batch, size_t concurrency)
      : store_(store), ownership_(ownership), max_batch_(max_batch), concurrency_(concurrency) {}

  // Called with the writes of each batch that committed, on the thread that committed it, as soon as
  // it did (before Commit returns).
  using Committed = std::function<void(std::span<const DesiredWrite>)>;

  // REQUIRES: `writes` as PlanDesiredWrites orders them.
  DesiredCommit Commit(const std::vector<DesiredWrite>& writes, const Committed& committed = {}) const;

 private:
  // One partition's batch, retried after a lost race; adds its outcome to `out`.
  void CommitBatch(std::span<const DesiredWrite> batch, DesiredCommit* out, const Committed& committed) const;
  // The writes of `batch` that still raise what the store holds now (read again), conditioned on
  // the etags read; what was read goes to `stored`.
  Result<std::vector<DesiredWrite>> Reread(const std::vector<DesiredWrite>& batch,
                                           std::vector<StoredDesired>* stored) const;

  store::Store* const store_;
  Ownership* const ownership_;
  const size_t max_batch_;
  const size_t concurrency_;
};

}  // namespace hcprp::backend
