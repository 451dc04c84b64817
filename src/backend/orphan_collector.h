// Deletes Cluster Service objects no resource document points at (private to src/backend): a
// cluster, or a node pool of a cluster that has a document, older than the window (its creation time,
// or when the collector first saw it if earlier). An object made while the store heard from no backend
// (EventFollower::Gap(), divergence.h) is a customer's resource that a store restored from a backup
// lost: it is held, never deleted, and recorded for `hcprp check` and the operator. The same pass
// finds idle resources whose object is gone (their delete finished after the backup) and gives each a
// Delete operation, which removes it. One backend collects for the whole store: the coordinator
// (Ownership::Coordinator(), the holder of shard 0). Thread-safe; one pass at a time.
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "backend/backend.h"
#include "backend/counters.h"
#include "backend/divergence.h"
#include "backend/event_follower.h"
#include "backend/operation_index.h"
#include "backend/operation_writer.h"
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
                  const OperationIndex* index, EventFollower* events, OperationWriter* writer,
                  const Clock* clock, const Logger* logger, Counters* counters)
      : options_(options),
        store_(store),
        cs_(cs),
        ownership_(ownership),
        index_(index),
        events_(events),
        writer_(writer),
        clock_(clock),
        logger_(logger),
        counters_(counters) {}

  // Runs a pass when the interval has passed since the last one, one was requested, or `force`.
  void MaybeRun(bool force);
  // Asks for a pass at the next MaybeRun() that finds this backend the coordinator (a start, once the
  // event stream is settled: what a restored store lacks is found at once, not at the interval).
  void RequestPass() { pass_requested_ = true; }
  // What the next pass would do, without deleting anything.
  Status Plan(std::vector<OrphanCandidate>* plan);

 private:
  // One pass (plan == nullptr), or its plan.
  Status Collect(std::vector<OrphanCandidate>* plan) HCPRP_EXCLUDES(mu_);
  // Adds the internalIds of every resource document of `doc_type` to `known`, and the documents of
  // those without an operation in flight to `idle`.
  Status KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known,
                          std::vector<store::Document>* idle);
  // Records a held object (once a run) and says so in the log.
  void Hold(const json::object& listed, const std::string& href, TimePoint created, const RestoreGap& gap);
  // Removes the records of held objects that are gone or that a document now points at.
  void ReleaseHeld(const std::set<std::string>& seen, const std::unordered_set<std::string>& known);
  // Gives a Delete operation to each idle resource whose object was not listed and is confirmed gone.
  void FollowGoneObjects(const std::vector<store::Document>& idle, const std::set<std::string>& seen);
  // Deletes a listed object that no document knows once it is older than the window (first
  // sightings are remembered), or holds it when it was made in the restore gap
  // (DecideUnknownObject); records its href in `seen`. False when this backend stopped being the
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
  EventFollower* const events_;
  OperationWriter* const writer_;
  const Clock* const clock_;
  const Logger* const logger_;
  Counters* const counters_;

  std::atomic<bool> pass_requested_{false};
  Mutex pass_mu_;  // one pass at a time
  Mutex mu_;
  std::map<std::string, TimePoint> first_seen_ HCPRP_GUARDED_BY(mu_);
  TimePoint next_pass_ HCPRP_GUARDED_BY(mu_){};
  std::set<std::string> held_ HCPRP_GUARDED_BY(mu_);  // recorded by this run
};

}  // namespace hcprp::backend
