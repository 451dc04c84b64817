// Deletes Cluster Service objects no resource document points at (private to src/backend): a
// cluster, or a node pool of a cluster that has a document, older than the window (its creation time,
// or when the collector first saw it if earlier). One backend collects for the whole store: the
// coordinator (Ownership::Coordinator(), the holder of shard 0). Thread-safe; one pass at a time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "backend/backend.h"
#include "backend/counters.h"
#include "backend/operation_index.h"
#include "backend/ownership.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "store/store.h"

namespace hcprp::backend {

class OrphanCollector {
 public:
  struct Options {
    Duration window{};
    Duration interval{};
  };
  // Not owned; all must outlive this.
  OrphanCollector(Options options, store::Store* store, clusterservice::Client* cs, Ownership* ownership,
                  const OperationIndex* index, const Clock* clock, const Logger* logger, Counters* counters)
      : options_(options),
        store_(store),
        cs_(cs),
        ownership_(ownership),
        index_(index),
        clock_(clock),
        logger_(logger),
        counters_(counters) {}

  // Runs a pass when the interval has passed since the last one (or `force`).
  void MaybeRun(bool force);
  // What the next pass would do, without deleting anything.
  Status Plan(std::vector<OrphanCandidate>* plan);

 private:
  // One pass (plan == nullptr), or its plan.
  Status Collect(std::vector<OrphanCandidate>* plan) HCPRP_EXCLUDES(mu_);
  // Adds the internalIds of every resource document of `doc_type` to `known`.
  Status KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known);
  // Deletes a listed object that no document knows once it is older than the window (first
  // sightings are remembered); records its href in `seen`. False when this backend stopped being the
  // coordinator. With `plan`, records what it would do instead and changes nothing.
  bool CollectIfOrphan(const json::object& listed, std::string_view collection,
                       const std::unordered_set<std::string>& known, TimePoint now,
                       std::set<std::string>* seen, std::vector<OrphanCandidate>* plan) HCPRP_EXCLUDES(mu_);

  // Constant after construction.
  const Options options_;
  store::Store* const store_;
  clusterservice::Client* const cs_;
  Ownership* const ownership_;
  const OperationIndex* const index_;
  const Clock* const clock_;
  const Logger* const logger_;
  Counters* const counters_;

  Mutex pass_mu_;  // one pass at a time
  Mutex mu_;
  std::map<std::string, TimePoint> first_seen_ HCPRP_GUARDED_BY(mu_);
  TimePoint next_pass_ HCPRP_GUARDED_BY(mu_){};
};

}  // namespace hcprp::backend
