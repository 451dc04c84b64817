// The backend's controller (private to src/backend; Backend in backend.h is its public face): the
// loops (change feed, Cluster Service events, timer steps, leases, notifications, orphan collection),
// the status checks of queued operations, and the fenced writes of transitions. The other parts are
// its members: CheckQueue, SubscriptionSweeper, OrphanCollector, ConditionSync, and the pure
// PlanTransition of transition_planner.h.
//
// Thread-safety: Start()/Stop() from one thread; everything else from any thread, also while started.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/check_queue.h"
#include "backend/condition_sync.h"
#include "backend/counters.h"
#include "backend/documents.h"
#include "backend/operation_index.h"
#include "backend/orphan_collector.h"
#include "backend/state_mapping.h"
#include "backend/subscription_sweeper.h"
#include "backend/transition_planner.h"
#include "clusterservice/mapping.h"
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
  Result<size_t> PumpEventsOnce(std::chrono::milliseconds wait);
  size_t DeliverNotificationsOnce();
  BackendStats Stats() const;
  Status FailOperation(std::string_view pk, std::string_view op_id, std::string code, std::string message);
  Status RedriveOperation(std::string_view pk, std::string_view op_id);
  Result<OrphanPlan> PlanOrphanCollection();

 private:
  // Instruments the backend records into (null without options.metrics); backend_metrics.cpp.
  struct Instruments {
    metrics::Histogram* event_to_commit = nullptr;
  };
  enum class Outcome { kApplied, kNoChange, kGone, kNotOwner, kError };
  // How a drain of the check queue ended.
  enum class Drained {
    kEmptied,      // nothing left
    kBudgetSpent,  // max_checks started: the rest is due at once, after the step's other work
    kStalled,      // a check must wait (store failure, Cluster Service delete budget): next tick
  };

  Controller(BackendOptions options, store::Store* store, clusterservice::Client* cs, const Clock* clock,
             Logger logger, Notifier* notifier);
  void RegisterMetrics(metrics::Registry& registry);

  // --- Loops and steps (controller.cpp)
  // Timer work. `exhaustive` (ReconcileOnce) lifts the per-step bounds and forces every periodic task.
  void Step(bool exhaustive);
  // Rebuilds the index from the store and queues checks: of every operation when `check_all`, else
  // of those the event stream cannot cover (EventsCover) and of those the rebuild found new.
  Status RebuildIndex(bool check_all);
  // Whether the event stream alone drives `op` while it is available: not a credential operation,
  // the object known, the Cluster Service delete issued. The others are polled.
  bool EventsCover(const OperationRecord& op);
  Status LoadDeletedSubscriptions();
  // Notifications owed from before this backend owned the partition (a restart, a takeover) or
  // recorded by the frontend (operations a delete canceled).
  Status LoadPendingNotifications();
  void QueuePendingNotification(const store::Document& pending);
  void HandleChange(const store::Change& change);
  void ApplyEvent(const clusterservice::Event& event);
  // ApplyEvent for each event of a page, on up to options_.event_concurrency threads (see there).
  void ApplyEvents(const std::vector<clusterservice::Event>& events);
  // Wake the timer loop (a step is due now) or the notifier loop (a notification is queued).
  void WakeTimerLoop();
  void WakeNotifierLoop();
  void FeedLoop();
  void EventLoop();
  void TimerLoop();
  // Renews ownership on its own cadence, so that a long step (slow Cluster Service) never lets the
  // lease lapse.
  void LeaseLoop();
  void NotifierLoop();
  void GcLoop();
  void WaitFor(std::chrono::milliseconds d);  // real time, ends early on Stop()

  // --- Checks against the Cluster Service (checks.cpp)
  void EnqueueCheck(const OperationRecord& op);
  Drained DrainChecks(size_t max_checks, std::atomic<size_t>* cs_delete_budget);
  // Returns false when it needs a CS delete but the budget is spent (re-queue it).
  bool CheckOperation(const OperationRecord& op, std::atomic<size_t>* cs_delete_budget);
  void RecoverCreate(const OperationRecord& op);
  // Records `href` (and what the Cluster Service assigned, where the resource holds nothing) on a
  // create's operation and resource in one fenced batch. False when not written.
  bool RecordObject(const OperationRecord& op, const store::Document& res, const arm::ResourceDocument& doc,
                    const std::string& href, json::object observed);
  // Records the object found for `op` (RememberFound) when no status change did: at once, so that the
  // resource shows what the Cluster Service assigned while the object is still pending.
  void RecordFound(const OperationRecord& op);
  // The object a create made that nothing recorded yet, searched by the ARM names it carries; one
  // made before the operation started, or being deleted, is not this create's. nullopt when there is
  // none yet (the frontend's request may still be on its way) or the search failed.
  std::optional<FoundObject> FindCreatedObject(const OperationRecord& op);
  // Indexes `op` under the found object's href (its events then find it) and keeps the object until
  // it is recorded: with a status change decided at once (Transit), else on its own (RecordFound).
  void RememberFound(OperationRecord op, FoundObject found) HCPRP_EXCLUDES(state_mu_);
  std::optional<FoundObject> FoundFor(std::string_view pk, std::string_view op_id) HCPRP_EXCLUDES(state_mu_);
  void ForgetFound(std::string_view pk, std::string_view op_id) HCPRP_EXCLUDES(state_mu_);
  // An event for an object no operation knows: when a create waits for it (ObjectFor), remembers it
  // for that create (RememberFound); else keeps a recently made object for a while (ClaimUnclaimed).
  bool FindCreateOfEvent(const clusterservice::Event& event);
  // The object (listed, or from an event) when it is the one `op`'s create made: the resource's names
  // (a child's under its cluster's object), not being deleted, not made before the operation started.
  std::optional<FoundObject> ObjectFor(const OperationRecord& op,
                                       const clusterservice::ServiceObject& object);
  // A recently made object whose event came before `op` was indexed (FindCreateOfEvent kept it).
  std::optional<FoundObject> ClaimUnclaimed(const OperationRecord& op) HCPRP_EXCLUDES(state_mu_);
  // The Cluster Service create request of `doc` (clusterservice/mapping.h) with its parent's internal
  // ID and the subscription's tenant, as the frontend sent it.
  Result<clusterservice::CreateRequest> RecoveryRequest(const OperationRecord& op,
                                                        const arm::ResourceDocument& doc);
  void ApplyDeadlines();
  std::optional<Duration> DeadlineOf(Request request) const;
  void MarkDeleteIssued(const OperationRecord& op, bool issued) HCPRP_EXCLUDES(state_mu_);
  bool DeleteIssued(const OperationRecord& op) HCPRP_EXCLUDES(state_mu_);

  // --- Writes (transit.cpp)
  // Moves an operation to decide(current record)'s transition in one fenced batch (backend.h).
  using Decider = std::function<std::optional<Transition>(const OperationRecord&)>;
  // Cluster Service conditions of the object `href`, seen with the status that decides a transition.
  struct SeenConditions {
    std::string href;
    json::array conditions;
  };
  // With `seen`, the conditions go into the operation's resource in the transition's batch when the
  // resource is the object's and kept (see TransitionInput::conditions); *conditions_committed tells
  // whether they were committed (or found stored already) with it.
  Outcome Transit(std::string_view pk, std::string_view op_id, const Decider& decide,
                  const SeenConditions* seen = nullptr, bool* conditions_committed = nullptr);
  // Reads what PlanTransition needs for `op` changing to `change`; kError on a store failure.
  Result<TransitionInput> ReadTransitionInput(std::string_view pk, const arm::OperationDocument& op,
                                              arm::StatusChange change);
  // Moves the plan's billing record into its writes and adds the deletion time of every deleted
  // resource that was billed (read for its ETag); a store failure other than not-found is returned.
  Status AppendBilling(std::string_view pk, TransitionPlan* plan);
  // The href of the Cluster Service object made for `resource_id` whose internal ID was never recorded
  // (searched by the ARM names it carries); empty when there is none.
  Result<std::string> FindUnrecordedObject(std::string_view pk, std::string_view resource_id);
  // The Cluster Service objects named like `resource_id` (under its cluster's object for a child).
  Result<json::array> ObjectsNamed(std::string_view pk, std::string_view resource_id);
  // Index and notifications after a batch ended operations.
  void AfterTerminal(const std::vector<store::Document>& ended_operations, const TransitionPlan& plan);
  // A resource of a deleted subscription: gives it a Delete operation unless it has one.
  void EnsureDeleteOperation(const store::Document& resource);
  // Counts a refused batch: a stale fence (told to the ownership) or a conflicting write.
  void CountRefusal(const Error& e, const store::Lease& fence);

  // Writes to one partition (Transit(), create recovery, implicit deletes) run one at a time;
  // different partitions' may run at once.
  Mutex& ApplyMutex(std::string_view pk) {
    return apply_mu_[std::hash<std::string_view>{}(pk) % apply_mu_.size()];
  }

  // Constant after construction.
  const BackendOptions options_;
  store::Store* const store_;
  clusterservice::Client* const cs_;
  const Clock* const clock_;
  const Logger logger_;
  std::unique_ptr<Ownership> owned_ownership_;
  Ownership* ownership_;

  OperationIndex index_;
  NotificationQueue notifications_;
  Counters counters_;
  Instruments instruments_;
  CheckQueue checks_;
  ConditionSync conditions_;
  OrphanCollector orphans_;
  SubscriptionSweeper sweeper_;
  std::atomic<double> feed_lag_seconds_{0};
  std::atomic<bool> events_available_{false};
  std::atomic<bool> resync_requested_{true};
  // Set when a read of the event stream failed or the stream was (re)positioned: events may have been
  // missed, so the next resync checks every operation.
  std::atomic<bool> events_interrupted_{true};
  std::atomic<bool> load_subscriptions_requested_{true};

  Mutex pass_mu_;  // one Step() at a time
  uint32_t resyncs_since_full_check_ HCPRP_GUARDED_BY(pass_mu_) = 0;
  std::array<Mutex, 32> apply_mu_;

  Mutex feed_mu_;
  std::string feed_continuation_ HCPRP_GUARDED_BY(feed_mu_);

  Mutex event_mu_;
  uint64_t events_after_ HCPRP_GUARDED_BY(event_mu_) = 0;

  mutable Mutex state_mu_;
  std::set<std::pair<std::string, std::string>> delete_issued_ HCPRP_GUARDED_BY(state_mu_);
  std::map<std::pair<std::string, std::string>, FoundObject> found_ HCPRP_GUARDED_BY(state_mu_);
  struct Unclaimed {
    clusterservice::ServiceObject object;
    TimePoint seen;
  };
  std::deque<Unclaimed> unclaimed_ HCPRP_GUARDED_BY(state_mu_);  // oldest first
  TimePoint next_resync_ HCPRP_GUARDED_BY(state_mu_){};
  TimePoint next_poll_ HCPRP_GUARDED_BY(state_mu_){};

  Mutex run_mu_;
  CondVar run_cv_;
  bool stopping_ HCPRP_GUARDED_BY(run_mu_) = false;
  bool wake_ HCPRP_GUARDED_BY(run_mu_) = false;         // work was queued
  bool notify_wake_ HCPRP_GUARDED_BY(run_mu_) = false;  // a notification was queued
  std::vector<std::thread> threads_ HCPRP_GUARDED_BY(run_mu_);
};

}  // namespace hcprp::backend
