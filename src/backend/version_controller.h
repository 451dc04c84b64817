// Keeps each cluster's desired control-plane z-stream as the update service publishes releases
// (private to src/backend), in two stages, as the real service's backend does:
//
//  1. Decide and record. The desired version lives in the store, on the cluster's service provider
//     cluster document (documents.h), decided from an in-memory view of the clusters of the
//     partitions this backend owns (channel group, the Cluster Service's desired version, the stored
//     one): each channel's graph ("<group>-<minor>") is read once a pass and the release
//     clusterservice::SelectDesiredVersion picks raises every cluster of the channel whose desired
//     version is older (version_plan.h). A customer's change to the next minor reaches the Cluster
//     Service first; the stored version follows it (never below what the Cluster Service holds). The
//     writes go in batches of up to kMaxBatch documents of one partition, conditioned on what was
//     read (desired_version_writer.h), up to `write_concurrency` batches at once; the desired version
//     never goes down.
//  2. Trigger. Every cluster whose stored desired version is above the Cluster Service's is asked to
//     upgrade (a PATCH of version.id), up to `concurrency` at once: the clusters of a batch as soon as
//     it committed, while the pass's other batches are written, then any other such cluster (one the
//     Cluster Service refused or missed on an earlier pass). Idempotent: a stop between the two
//     stages is caught by the next pass, and a pass runs on start.
//
// The view is built by a full pass (a List of the Cluster Service's clusters and one query of the
// stored documents) on start, on a change of ownership and every `resync` (the real service resyncs
// every 5 min); the event follower keeps it current between them (Observe), so that a release
// announced on the event stream (Request) costs a pass over the view, without a List. A full pass
// also removes the documents of clusters that are gone.
//
// Thread-safe: Request(), RequestResync() and Observe() from any thread; Run() on one thread;
// Pass() and ViewPass() from any thread (passes run one at a time).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/counters.h"
#include "backend/desired_version_writer.h"
#include "backend/ownership.h"
#include "backend/version_plan.h"
#include "clusterservice/client.h"
#include "clusterservice/event.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::backend {

struct VersionPassResult {
  size_t clusters = 0;   // clusters of owned partitions looked at
  size_t recorded = 0;   // desired versions written to the store
  size_t raised = 0;     // of which above the Cluster Service's desired version (upgrades decided)
  size_t triggered = 0;  // upgrades asked of the Cluster Service
  size_t failed = 0;     // channels without a release to pick, writes and upgrade requests refused
  // "4.20.12 completed|partial|desired" -> clusters, as the Cluster Service listed them (full passes)
  std::map<std::string, size_t> by_version;
};

class VersionController {
 public:
  static constexpr size_t kMaxBatch = 500;

  // Not owned; all must outlive this.
  VersionController(store::Store* store, clusterservice::Client* cs, Ownership* ownership, Counters* counters,
                    const Logger* logger, std::chrono::milliseconds resync, size_t concurrency,
                    size_t write_concurrency)
      : store_(store),
        cs_(cs),
        ownership_(ownership),
        counters_(counters),
        logger_(logger),
        resync_(resync),
        concurrency_(std::max<size_t>(concurrency, 1)),
        writer_(store, ownership, kMaxBatch, std::max<size_t>(write_concurrency, 1)) {}

  // A release or an upgrade edge changed: the next pass (over the view) runs at once.
  void Request();
  // The owned partitions changed: the next pass builds the view again.
  void RequestResync();
  // A Cluster Service event: the view follows a cluster's desired version, channel group and
  // deletion; a cluster new to the view, or whose Cluster Service desired version passed the stored
  // one, requests a pass.
  void Observe(const clusterservice::Event& event);
  // Runs passes until Stop(): when requested, else a full pass every `resync`.
  void Run();
  void Stop();
  // A full pass: the view built again, then planned, recorded and triggered.
  Result<VersionPassResult> Pass();
  // A pass over the view as it stands (a full pass when there is none yet).
  Result<VersionPassResult> ViewPass();

  // The clusters of the view by version and state, for the hcprp_cluster_versions gauge.
  std::map<std::string, size_t> Counts() const;
  uint64_t raised_total() const { return raised_total_; }

 private:
  using View = std::unordered_map<std::string, ClusterVersionState>;  // by href

  Result<VersionPassResult> FullPassLocked() HCPRP_REQUIRES(pass_mu_);
  // The owned clusters the Cluster Service lists, counted into `result`.
  Result<View> ListClusters(VersionPassResult* result);
  // Adds the stored desired versions to `view`; removes the documents of clusters it lacks.
  Status ReadStored(View* view);
  // Plans, records and triggers over `clusters` (a copy of the view's owned clusters).
  VersionPassResult Apply(std::vector<ClusterVersionState> clusters, VersionPassResult result)
      HCPRP_REQUIRES(pass_mu_);
  // Commits `writes` and asks each cluster a write raises above the Cluster Service's desired version
  // to upgrade as soon as its batch committed, while the other batches commit; `triggered`: how many
  // were asked (the others failed).
  DesiredCommit CommitAndTrigger(const std::vector<DesiredWrite>& writes, size_t* triggered);
  // The pick of every deciding channel of `clusters`, each graph read once.
  ChannelPicks PicksOf(const std::vector<ClusterVersionState>& clusters);
  // Asks the Cluster Service to upgrade each cluster to its stored desired version; the count asked.
  size_t TriggerAll(const std::vector<const ClusterVersionState*>& triggers);
  bool TriggerOne(const ClusterVersionState& c);  // false: refused, or could not be reached
  std::vector<ClusterVersionState> OwnedOfView() const;
  // Applies one cluster event to `view`; true when it asks for a pass.
  static bool ApplyEvent(const clusterservice::Event& event, View* view);

  store::Store* const store_;
  clusterservice::Client* const cs_;
  Ownership* const ownership_;
  Counters* const counters_;
  const Logger* const logger_;
  const std::chrono::milliseconds resync_;
  const size_t concurrency_;
  const DesiredVersionWriter writer_;

  Mutex pass_mu_;  // one pass at a time
  mutable Mutex mu_;
  CondVar cv_;
  bool requested_ HCPRP_GUARDED_BY(mu_) = true;
  bool resync_requested_ HCPRP_GUARDED_BY(mu_) = true;
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;

  mutable Mutex view_mu_;
  View view_ HCPRP_GUARDED_BY(view_mu_);
  bool view_loaded_ HCPRP_GUARDED_BY(view_mu_) = false;
  // While a full pass builds the view: the events to apply to the new one too.
  bool loading_ HCPRP_GUARDED_BY(view_mu_) = false;
  std::vector<clusterservice::Event> replay_ HCPRP_GUARDED_BY(view_mu_);

  std::atomic<uint64_t> raised_total_{0};
};

}  // namespace hcprp::backend
