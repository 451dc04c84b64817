// The backend's Prometheus metrics. Most are the counters Stats() already keeps, read at scrape time:
//   hcprp_backend_shards_held, hcprp_backend_active, hcprp_backend_operations_in_flight,
//   hcprp_backend_checks_queued, hcprp_backend_checks_running, hcprp_backend_change_feed_lag_seconds,
//   hcprp_backend_subscription_sweeps_active, hcprp_backend_notifications_pending (gauges);
//   hcprp_backend_events_total{result}, hcprp_backend_checks_total, hcprp_backend_transitions_total,
//   hcprp_backend_operations_ended_total, hcprp_backend_deadline_expiries_total,
//   hcprp_backend_orphans_collected_total, hcprp_backend_subscription_sweeps_total,
//   hcprp_backend_notifications_total{result}, hcprp_backend_write_refusals_total{reason},
//   hcprp_backend_errors_total, hcprp_backend_full_resyncs_total (counters);
// and one histogram recorded as it happens:
//   hcprp_backend_event_to_commit_seconds: a Cluster Service event received to the operation status
//   it caused committed.
#include "backend/controller.h"

namespace hcprp::backend {

namespace {

using metrics::Sample;
using metrics::Type;

std::vector<Sample> One(double v) { return {Sample{{}, v}}; }

}  // namespace

metrics::Histogram* Controller::EventToCommitHistogram(metrics::Registry* r) {
  if (r == nullptr) return nullptr;
  return r
      ->AddHistogram(
          "hcprp_backend_event_to_commit_seconds",
          "Cluster Service event received to the operation status it caused committed in the store", {},
          metrics::DurationBuckets())
      .With({});
}

metrics::Family<metrics::Histogram>* Controller::UpgradeHistogram(metrics::Registry* r) {
  if (r == nullptr) return nullptr;
  // Upgrades take seconds under the simulator's fast profiles and up to an hour under the realistic one.
  return &r->AddHistogram("hcprp_backend_upgrade_seconds",
                          "Duration of upgrades whose completion the backend recorded, from the Cluster "
                          "Service's version history (start of the rollout to its completion)",
                          {"kind"}, {1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 2700, 3600, 7200});
}

void Controller::RegisterMetrics(metrics::Registry& r) {
  auto gauge = [&](std::string name, std::string help, std::function<double(const BackendStats&)> f) {
    r.AddCallback(std::move(name), std::move(help), Type::kGauge, {},
                  [this, f = std::move(f)] { return One(f(Stats())); });
  };
  auto counter = [&](std::string name, std::string help, std::function<double(const BackendStats&)> f) {
    r.AddCallback(std::move(name), std::move(help), Type::kCounter, {},
                  [this, f = std::move(f)] { return One(f(Stats())); });
  };
  gauge("hcprp_backend_active", "1 while this backend holds at least one shard",
        [](const BackendStats& s) { return s.active ? 1 : 0; });
  gauge("hcprp_backend_shards_held", "Subscription shard leases this backend holds",
        [](const BackendStats& s) { return static_cast<double>(s.shards_held); });
  gauge("hcprp_backend_operations_in_flight", "Non-terminal operations this backend drives",
        [](const BackendStats& s) { return static_cast<double>(s.in_flight); });
  gauge("hcprp_backend_checks_queued", "Operations waiting for a check against the Cluster Service",
        [](const BackendStats& s) { return static_cast<double>(s.checks_queued); });
  gauge("hcprp_backend_checks_running", "Checks against the Cluster Service in progress",
        [](const BackendStats& s) { return static_cast<double>(s.checks_running); });
  gauge("hcprp_backend_change_feed_lag_seconds",
        "Age of the last change read from the store's change feed when it was read (0 when caught up)",
        [](const BackendStats& s) { return s.feed_lag_seconds; });
  gauge("hcprp_backend_subscription_sweeps_active", "Deleted subscriptions whose resources are being deleted",
        [](const BackendStats& s) { return static_cast<double>(s.sweeps_active); });
  gauge("hcprp_backend_notifications_pending", "Asynchronous operation notifications not yet delivered",
        [](const BackendStats& s) { return static_cast<double>(s.notifications_pending); });
  gauge("hcprp_backend_events_available", "1 while the Cluster Service event stream works",
        [](const BackendStats& s) { return s.events_available ? 1 : 0; });
  counter("hcprp_backend_checks_total", "Operations checked against the Cluster Service",
          [](const BackendStats& s) { return static_cast<double>(s.checks); });
  counter("hcprp_backend_transitions_total", "Operation status changes committed",
          [](const BackendStats& s) { return static_cast<double>(s.transitions); });
  counter("hcprp_backend_operations_ended_total", "Operations this backend brought to a terminal state",
          [](const BackendStats& s) { return static_cast<double>(s.terminal); });
  counter("hcprp_backend_deadline_expiries_total", "Operations failed because their deadline passed",
          [](const BackendStats& s) { return static_cast<double>(s.deadline_failures); });
  counter("hcprp_backend_orphans_collected_total", "Cluster Service objects without a document deleted",
          [](const BackendStats& s) { return static_cast<double>(s.gc_deleted); });
  counter("hcprp_backend_subscription_sweeps_total", "Deleted subscriptions swept empty",
          [](const BackendStats& s) { return static_cast<double>(s.sweeps_finished); });
  counter("hcprp_backend_full_resyncs_total", "Full resynchronisations of the operation index",
          [](const BackendStats& s) { return static_cast<double>(s.full_resyncs); });
  counter("hcprp_backend_errors_total", "Store or Cluster Service failures met by the backend's loops",
          [](const BackendStats& s) { return static_cast<double>(s.errors); });
  counter("hcprp_backend_change_feed_changes_total", "Changes read from the store's change feed",
          [](const BackendStats& s) { return static_cast<double>(s.feed_changes); });
  r.AddCallback("hcprp_backend_events_total", "Cluster Service events received, by what they matched",
                Type::kCounter, {"result"}, [this] {
                  BackendStats s = Stats();
                  return std::vector<Sample>{
                      {{"operation"}, static_cast<double>(s.events_applied)},
                      {{"no_operation"}, static_cast<double>(s.events_received - s.events_applied)}};
                });
  r.AddCallback("hcprp_backend_notifications_total", "Asynchronous operation notifications, by result",
                Type::kCounter, {"result"}, [this] {
                  BackendStats s = Stats();
                  return std::vector<Sample>{
                      {{"sent"}, static_cast<double>(s.notifications_sent)},
                      {{"failed_attempt"}, static_cast<double>(s.notification_failures)},
                      {{"dropped"}, static_cast<double>(s.notifications_dropped)}};
                });
  r.AddCallback("hcprp_cluster_versions",
                "Clusters of this backend's partitions by OpenShift version and state (completed, partial: "
                "running; desired: to be rolled out), as of the last version pass",
                Type::kGauge, {"version", "state"}, [this] {
                  std::vector<Sample> out;
                  for (const auto& [key, n] : versions_.Counts()) {
                    size_t cut = key.find(' ');
                    out.push_back({{key.substr(0, cut), key.substr(cut + 1)}, static_cast<double>(n)});
                  }
                  return out;
                });
  r.AddCallback("hcprp_backend_version_raises_total",
                "Desired control-plane versions recorded above the Cluster Service's (upgrades decided)",
                Type::kCounter, {}, [this] { return One(static_cast<double>(versions_.raised_total())); });
  r.AddCallback("hcprp_backend_write_refusals_total", "Backend writes the store refused, by reason",
                Type::kCounter, {"reason"}, [this] {
                  BackendStats s = Stats();
                  return std::vector<Sample>{{{"stale_fence"}, static_cast<double>(s.fence_refusals)},
                                             {{"conflict"}, static_cast<double>(s.write_conflicts)}};
                });
}

}  // namespace hcprp::backend
