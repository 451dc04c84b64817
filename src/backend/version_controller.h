// Raises each cluster's desired control-plane z-stream as the update service publishes releases
// (private to src/backend). A pass lists the Cluster Service's clusters of the partitions this backend
// owns, reads the graph of each cluster's channel ("<group>-<minor>", once per pass) and, where the
// release clusterservice::SelectDesiredVersion picks is newer than the cluster's desired version,
// sets it on the Cluster Service object, which starts the upgrade; up to `concurrency` clusters are
// raised at once. The desired version never goes down.
// A pass runs when the Cluster Service announces a release or an edge change on its event stream
// (Request()) and at least every `resync` as a safety net (the real service's resyncs every 5 min).
//
// Thread-safe: Request() from any thread; Run() on one thread; Pass() from any thread (passes run one
// at a time).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backend/counters.h"
#include "backend/ownership.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "metrics/registry.h"

namespace hcprp::backend {

struct VersionPassResult {
  size_t clusters = 0;  // clusters of owned partitions looked at
  size_t raised = 0;    // desired versions raised (upgrades started)
  size_t failed = 0;    // clusters whose channel had no release to pick, or whose raise failed
  std::map<std::string, size_t> by_version;  // "4.20.12 completed|partial|desired" -> clusters
};

class VersionController {
 public:
  // Not owned; all must outlive this.
  VersionController(clusterservice::Client* cs, Ownership* ownership, Counters* counters,
                    const Logger* logger, std::chrono::milliseconds resync, size_t concurrency)
      : cs_(cs),
        ownership_(ownership),
        counters_(counters),
        logger_(logger),
        resync_(resync),
        concurrency_(std::max<size_t>(concurrency, 1)) {}

  // A release or an upgrade edge changed: the next pass runs at once.
  void Request();
  // Runs passes until Stop(): when requested, else every `resync`.
  void Run();
  void Stop();
  // One pass over every cluster of the owned partitions.
  Result<VersionPassResult> Pass();

  // The clusters by version and state of the last pass, for the hcprp_cluster_versions gauge.
  std::map<std::string, size_t> LastCounts() const;
  uint64_t raised_total() const { return raised_total_; }

 private:
  // A cluster whose desired version rises from `from` to `to` (raw versions).
  struct Raise {
    std::string href;
    std::string from;
    std::string to;
    std::string channel_group;
  };
  // Counts every owned cluster into `result` and returns those whose channel offers a newer pick.
  std::vector<Raise> PlanRaises(const json::array& clusters, VersionPassResult* result);
  // The desired version of a cluster at `minor` in `channel_group`, from the channel's graph.
  Result<std::string> PickOf(const std::string& channel, std::string_view minor,
                             std::string_view channel_group);
  // PATCHes the clusters on up to concurrency_ threads; adds what was raised and failed to `result`.
  void RaiseAll(const std::vector<Raise>& raises, VersionPassResult* result);
  bool RaiseOne(const Raise& r);  // false: the Cluster Service refused it, or could not be reached

  clusterservice::Client* const cs_;
  Ownership* const ownership_;
  Counters* const counters_;
  const Logger* const logger_;
  const std::chrono::milliseconds resync_;
  const size_t concurrency_;

  Mutex pass_mu_;  // one Pass() at a time
  mutable Mutex mu_;
  CondVar cv_;
  bool requested_ HCPRP_GUARDED_BY(mu_) = true;
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  std::map<std::string, size_t> last_counts_ HCPRP_GUARDED_BY(mu_);
  std::atomic<uint64_t> raised_total_{0};
};

}  // namespace hcprp::backend
