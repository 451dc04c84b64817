// The backend's controller (private to src/backend; Backend in backend.h is its public face): the one
// place that composes the backend's parts and runs their loops (change feed, Cluster Service events,
// timer steps, leases, notifications, orphan collection). The parts own their state:
//   StatusChecks (status_checks.h): the check queue, status reads, deadlines, create recovery;
//   EventFollower (event_follower.h): the event stream's position and the application of events;
//   LateObjects (late_objects.h): objects made by create requests that arrived after their create ended;
//   OperationWriter (operation_writer.h): the fenced writes of transitions;
//   Steering (steering.h): the operators' actions;
//   ObjectMemo, ConditionSync, OrphanCollector, SubscriptionSweeper, OperationIndex, NotificationQueue.
// The controller itself keeps the change feed's position and when the next resync and poll are due.
//
// Thread-safety: Start()/Stop() from one thread; everything else from any thread, also while started.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/condition_sync.h"
#include "backend/counters.h"
#include "backend/documents.h"
#include "backend/event_follower.h"
#include "backend/late_objects.h"
#include "backend/object_memo.h"
#include "backend/operation_index.h"
#include "backend/operation_writer.h"
#include "backend/orphan_collector.h"
#include "backend/status_checks.h"
#include "backend/steering.h"
#include "backend/subscription_sweeper.h"
#include "backend/version_controller.h"
#include "core/mutex.h"

namespace hcprp::backend {

class Controller {
 public:
  // As Backend::Create.
  static Result<std::unique_ptr<Controller>> Create(BackendOptions options, store::Store* store,
                                                    clusterservice::Client* cs, const Clock* clock,
                                                    Logger logger, Notifier* notifier);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // See Backend.
  Status Start();
  void Stop();
  Status ReconcileOnce();
  Result<size_t> PumpChangesOnce();
  Result<size_t> PumpEventsOnce(std::chrono::milliseconds wait) { return events_.PumpOnce(wait); }
  Result<VersionPassResult> VersionPassOnce() { return versions_.Pass(); }
  size_t DeliverNotificationsOnce() { return notifications_.Deliver(); }
  BackendStats Stats() const;
  Steering& steering() { return steering_; }

 private:
  Controller(BackendOptions options, store::Store* store, clusterservice::Client* cs, const Clock* clock,
             Logger logger, Notifier* notifier);
  // The event-to-commit histogram of options.metrics (null without); backend_metrics.cpp.
  static metrics::Histogram* EventToCommitHistogram(metrics::Registry* registry);
  // The upgrade-duration histograms of options.metrics (null without); backend_metrics.cpp.
  static metrics::Family<metrics::Histogram>* UpgradeHistogram(metrics::Registry* registry);
  void RegisterMetrics(metrics::Registry& registry);

  // Timer work. `exhaustive` (ReconcileOnce) lifts the per-step bounds and forces every periodic task.
  void Step(bool exhaustive);
  // Loads what a new shard owner must learn (pending notifications, deleted subscriptions) when asked.
  void LoadIfRequested();
  // Rebuilds the index (and queues checks) when a resync is due or requested; else queues the polls
  // that are due.
  void ResyncOrPoll(TimePoint now, bool exhaustive) HCPRP_REQUIRES(pass_mu_);
  // Rebuilds the index from the store and queues checks: of every operation when `check_all`, else
  // of those the event stream cannot cover (EventsCover) and of those the rebuild found new.
  Status RebuildIndex(bool check_all);
  Status LoadDeletedSubscriptions();
  // Notifications owed from before this backend owned the partition (a restart, a takeover) or
  // recorded by the frontend (operations a delete canceled).
  Status LoadPendingNotifications();
  void QueuePendingNotification(const store::Document& pending);
  void HandleChange(const store::Change& change);
  // The partitions this backend owns changed: resync, load what a new owner must learn, version pass.
  void OwnershipChanged();
  // Wake the timer loop (a step is due now) or the notifier loop (a notification is queued).
  void WakeTimerLoop();
  void WakeNotifierLoop();
  void FeedLoop();
  void EventLoop();
  // Once the event stream is positioned and this backend owns a shard: unless `resumed` (where an
  // earlier run left off), requests a version pass and syncs every object's status from a listing
  // (what the positioning passed over unapplied); then requests a resync. False when it must be
  // tried again.
  bool SettleEvents(bool resumed);
  void TimerLoop();
  // Renews ownership on its own cadence, so that a long step (slow Cluster Service) never lets the
  // lease lapse.
  void LeaseLoop();
  void NotifierLoop();
  void GcLoop();
  void WaitFor(std::chrono::milliseconds d);  // real time, ends early on Stop()

  // Constant after construction.
  const BackendOptions options_;
  store::Store* const store_;
  const Clock* const clock_;
  const Logger logger_;
  std::unique_ptr<Ownership> owned_ownership_;
  Ownership* ownership_;

  // The parts, in the order they are built (each uses only those before it).
  Counters counters_;
  OperationIndex index_;
  VersionController versions_;
  NotificationQueue notifications_;
  ObjectMemo memo_;
  OperationWriter writer_;
  ConditionSync conditions_;
  StatusChecks checks_;
  LateObjects late_;
  EventFollower events_;
  OrphanCollector orphans_;
  SubscriptionSweeper sweeper_;
  Steering steering_;

  std::atomic<double> feed_lag_seconds_{0};
  std::atomic<bool> resync_requested_{true};
  std::atomic<bool> load_subscriptions_requested_{true};

  Mutex pass_mu_;  // one Step() at a time
  uint32_t resyncs_since_full_check_ HCPRP_GUARDED_BY(pass_mu_) = 0;
  TimePoint next_resync_ HCPRP_GUARDED_BY(pass_mu_){};
  TimePoint next_poll_ HCPRP_GUARDED_BY(pass_mu_){};

  Mutex feed_mu_;
  std::string feed_continuation_ HCPRP_GUARDED_BY(feed_mu_);

  std::atomic<bool> shards_taken_{false};  // a lease tick gained shards (OwnershipChanged())
  Mutex run_mu_;
  CondVar run_cv_;
  bool stopping_ HCPRP_GUARDED_BY(run_mu_) = false;
  bool wake_ HCPRP_GUARDED_BY(run_mu_) = false;         // work was queued
  bool notify_wake_ HCPRP_GUARDED_BY(run_mu_) = false;  // a notification was queued
  std::vector<std::thread> threads_ HCPRP_GUARDED_BY(run_mu_);
};

}  // namespace hcprp::backend
