// The backend: drives every asynchronous operation the frontend accepted to a terminal state,
// against the Cluster Service (seed 000 "RP Backend Pod", DESIGN.md sections 2, 4 and 5).
//
// How it learns of work:
//  - the store's change feed (resources container): new and changed operation documents and
//    subscription documents (state Deleted starts the subscription's cleanup);
//  - the Cluster Service event stream (WatchEvents): state changes, applied through an in-memory
//    index of non-terminal operations keyed by internal ID, without touching the Cluster Service;
//  - a bounded periodic resync (resync_interval) that rebuilds the index with one cross-partition
//    query of non-terminal operations and checks each against the Cluster Service: a safety net,
//    whose cost is proportional to the operations in flight, never to idle subscriptions;
//  - a Cluster Service without an event stream (WatchEvents answers kUnavailable): in-flight
//    operations are polled every poll_interval instead.
//
// What it writes: an operation's status, lastTransitionTime and error, together with its resource's
// provisioningState (and the removal of activeOperationId once terminal) in one batch, conditioned
// on the operation's status being what was read (a terminal operation never changes) and on the
// resource's activeOperationId naming the operation (a superseded operation changes alone). A
// Delete the Cluster Service confirms (404) deletes the resource document and its children's in
// the same batch and ends their operations Succeeded. Every write carries the fence of the lease of
// the partition's shard: several backends on one store split the subscriptions between them
// (ownership.h) and each indexes, checks, sweeps and writes only the partitions it owns; the one
// holding shard 0 also collects orphans.
//
// Credential operations (what "done" means, see also state_mapping.h):
//   RequestCredential: the operation's internalId is the credential object the frontend's action
//     created (.../clusters/{id}/break_glass_credentials/{id}); done when Get() reports "status"
//     "issued" (Succeeded) or "failed"/"revoked"/"expired" (Failed).
//   RevokeCredentials: the operation's internalId is the cluster; done when no item of
//     List(cluster + "/break_glass_credentials") has status "awaiting_revocation" or "revoking".
//   Neither changes the resource's provisioningState; activeOperationId is cleared if it names them.
//   They are polled every poll_interval (and re-checked on any event of their object).
//
// Thread-safety: Start()/Stop() from one thread; ReconcileOnce(), Stats() and the *Once() steps
// are safe from any thread, also while started.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "backend/documents.h"
#include "backend/notifier.h"
#include "backend/operation_index.h"
#include "backend/ownership.h"
#include "backend/state_mapping.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::backend {

// The Cluster Service create request of a resource whose Create operation lost its frontend
// before the internal ID was recorded.
struct ClusterServiceCreateRequest {
  std::string collection_href;  // e.g. /api/aro_hcp/v1alpha1/clusters
  json::object body;
};

// Builds that request from the resource document (and, for node pools and external auths, the
// parent cluster's document). The composition root plugs the api-version conversion in here.
class CreateRequestBuilder {
 public:
  virtual ~CreateRequestBuilder() = default;
  virtual Result<ClusterServiceCreateRequest> Build(const store::Document& resource,
                                                    const store::Document* parent) = 0;
};

// The default builder: the collection from the resource type and the parent's internal ID, and the
// body the frontend sends ({"kind", "name", "azure": {...}, "properties": canonical properties from
// the document's stored resource}). With the idempotency key it re-fetches an object the Cluster
// Service already made; otherwise it creates the object the frontend meant to create.
class DocumentCreateRequestBuilder final : public CreateRequestBuilder {
 public:
  Result<ClusterServiceCreateRequest> Build(const store::Document& resource,
                                            const store::Document* parent) override;
};

struct BackendOptions {
  // This backend's name in the leases; empty gives "backend-<uuid>".
  std::string owner;
  // Shard leases (see ownership.h): a dead backend's shards move to the others within about
  // lease_ttl + lease_ttl / 3.
  std::chrono::milliseconds lease_ttl{3000};
  uint32_t shards = 8;  // every backend of a store must use the same number
  // Replaces the shard leases (tests). Not owned; must outlive the backend. Null: ShardedLeases.
  Ownership* ownership = nullptr;

  // Safety-net resync (Clock time).
  Duration resync_interval = std::chrono::seconds(45);
  // Status polling of in-flight operations when the Cluster Service has no event stream, and of
  // credential operations always (Clock time).
  Duration poll_interval = std::chrono::seconds(10);
  // Real-time waits of the loops.
  std::chrono::milliseconds tick{1000};          // timer loop wake-up
  std::chrono::milliseconds feed_wait{1000};     // change feed long-poll
  std::chrono::milliseconds event_wait{1000};    // WatchEvents long-poll
  std::chrono::milliseconds event_retry{30000};  // retry WatchEvents after kUnavailable

  // Deadlines from the operation's startTime (Clock time); past them the operation ends Failed.
  Duration create_deadline = std::chrono::minutes(60);
  Duration update_deadline = std::chrono::minutes(60);
  Duration delete_deadline = std::chrono::hours(12);
  Duration credential_deadline = std::chrono::minutes(60);
  // An Accepted Create without internalId older than this lost its frontend midway.
  Duration create_recovery_grace = std::chrono::minutes(2);
  CreateRequestBuilder* create_request_builder = nullptr;  // not owned; null: the default builder

  // Orphan collection: a Cluster Service cluster, or a node pool of a cluster that has a document,
  // that no resource document points at and older than the window is deleted.
  bool gc_enabled = true;
  Duration gc_window = std::chrono::hours(1);
  Duration gc_interval = std::chrono::minutes(10);

  // Queued checks run on up to this many threads at once (each waits on the Cluster Service and
  // on durable commits).
  size_t check_concurrency = 4;
  // Work bounds of one timer step (ReconcileOnce has none).
  size_t max_checks_per_step = 500;
  size_t max_cs_deletes_per_step = 50;
  size_t sweep_page_size = 100;

  NotificationOptions notifications;

  // Where the backend registers its metrics (not owned, outlives the backend); null: none. See
  // backend_metrics.cpp for the list (hcprp_backend_*).
  metrics::Registry* metrics = nullptr;
};

struct BackendStats {
  bool active = false;  // holds at least one shard
  size_t shards_held = 0;
  bool events_available = false;  // the Cluster Service event stream works
  size_t in_flight = 0;           // indexed non-terminal operations
  uint64_t full_resyncs = 0;
  uint64_t feed_changes = 0;
  uint64_t events_received = 0;
  uint64_t events_applied = 0;  // events that matched an indexed operation
  uint64_t checks = 0;          // operations checked against the Cluster Service
  uint64_t cs_creates = 0;
  uint64_t cs_deletes = 0;
  uint64_t transitions = 0;  // committed status changes
  uint64_t terminal = 0;     // of which terminal
  uint64_t deadline_failures = 0;
  uint64_t recovered_creates = 0;
  uint64_t implicit_deletes = 0;  // Delete operations created for deleted subscriptions
  uint64_t resources_deleted = 0;
  uint64_t gc_deleted = 0;
  uint64_t fence_refusals = 0;
  uint64_t write_conflicts = 0;
  uint64_t errors = 0;
  uint64_t idle_condition_syncs = 0;  // events of objects without an operation whose conditions were read
  uint64_t notifications_sent = 0;
  uint64_t notification_failures = 0;
  uint64_t notifications_dropped = 0;
  size_t notifications_pending = 0;  // queued, not yet delivered or given up
  size_t checks_queued = 0;          // operations waiting for a check
  size_t checks_running = 0;         // checks in progress
  size_t sweeps_active = 0;          // deleted subscriptions being swept
  uint64_t sweeps_finished = 0;
  double feed_lag_seconds = 0;  // age of the last change read from the feed when it was read
};

// One Cluster Service object no resource document points at, and what the orphan collector does
// with it (Backend::PlanOrphanCollection).
struct OrphanCandidate {
  std::string internal_id;
  std::string state;   // the Cluster Service state
  TimePoint since{};   // creation time, or when the collector first saw it if earlier
  TimePoint due_at{};  // since + gc_window: deleted at the first pass after it
  bool due = false;    // the next pass deletes it
};

struct OrphanPlan {
  bool coordinator = false;  // this backend runs the collector (it holds shard 0)
  Duration window{};
  std::vector<OrphanCandidate> candidates;
};

class Backend {
 public:
  // store, cs and clock are not owned and must outlive the backend; notifier may be null (then
  // notifications are not sent).
  static Result<std::unique_ptr<Backend>> Create(BackendOptions options, store::Store* store,
                                                 clusterservice::Client* cs, const Clock* clock,
                                                 Logger logger, Notifier* notifier);
  ~Backend();  // Stop()s.

  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Starts the threads: change-feed follower, event follower, timer loop, lease renewal, notifier
  // and (gc_enabled) orphan collection.
  Status Start();
  // Stops and joins them and releases ownership. Idempotent.
  void Stop();

  // One full synchronous pass: ownership tick, change feed drained, index rebuilt, every in-flight
  // operation checked against the Cluster Service and applied, deadlines, subscription cleanup,
  // orphan collection, due notifications. kConflict when another backend owns the store.
  Status ReconcileOnce();

  // Single steps of the loops, for tests.
  Result<size_t> PumpChangesOnce();                               // drains the change feed
  Result<size_t> PumpEventsOnce(std::chrono::milliseconds wait);  // one WatchEvents page
  size_t DeliverNotificationsOnce();

  BackendStats Stats() const;

  // Operator actions (the admin API), in steering.cpp. Each acts only on partitions this backend
  // owns (kConflict otherwise: another backend's admin endpoint is the one to ask).
  //
  // Ends a non-terminal operation Failed with error {code, message}, as a deadline would: the same
  // fenced batch as every transition (the resource's provisioningState, activeOperationId,
  // notification). kNotFound: no such operation; kPreconditionFailed: it is already terminal.
  Status FailOperation(std::string_view pk, std::string_view op_id, std::string code, std::string message);
  // Checks a non-terminal operation against the Cluster Service now, ahead of any event or resync.
  Status RedriveOperation(std::string_view pk, std::string_view op_id);
  // What the orphan collector would do on its next pass, without deleting anything.
  Result<OrphanPlan> PlanOrphanCollection();

 private:
  struct Counters {
    std::atomic<uint64_t> full_resyncs{0}, feed_changes{0}, events_received{0}, events_applied{0}, checks{0},
        cs_creates{0}, cs_deletes{0}, transitions{0}, terminal{0}, deadline_failures{0}, recovered_creates{0},
        implicit_deletes{0}, resources_deleted{0}, gc_deleted{0}, fence_refusals{0}, write_conflicts{0},
        errors{0}, idle_condition_syncs{0}, checks_running{0}, sweeps_finished{0};
  };
  // Instruments the backend records into (null without options.metrics); backend_metrics.cpp.
  struct Instruments {
    metrics::Histogram* event_to_commit = nullptr;
  };
  void RegisterMetrics(metrics::Registry& registry);
  enum class Outcome { kApplied, kNoChange, kGone, kNotOwner, kError };
  struct Sweep {
    std::string continuation;
    bool found_any = false;
    TimePoint due{};
  };

  Backend(BackendOptions options, store::Store* store, clusterservice::Client* cs, const Clock* clock,
          Logger logger, Notifier* notifier);

  // Timer work. `exhaustive` (ReconcileOnce) lifts the per-step bounds and forces every periodic
  // task.
  void Step(bool exhaustive);
  Status RebuildIndex();
  Status LoadDeletedSubscriptions();
  // Notifications owed from before this backend owned the partition (a restart, a takeover) or
  // recorded by the frontend (operations a delete canceled).
  Status LoadPendingNotifications();
  void QueuePendingNotification(const store::Document& pending);
  static void AppendPendingNotification(std::string_view op_id, std::string_view uri,
                                        std::vector<store::WriteOp>* ops);
  void HandleChange(const store::Change& change);
  void ApplyEvent(const clusterservice::Event& event);
  // Copies the Cluster Service object's status.conditions (when it has some and they changed) into the
  // resource document of `op` (arm::kPathServiceStatus), for the frontend to render. Best effort: a
  // refused or failed write is left to the next event or status read. Never changes the operation.
  void SyncConditions(const OperationRecord& op, const std::string& href, const json::object& status);
  void SyncConditionsOf(const std::string& pk, const std::string& resource_id, const std::string& href,
                        const json::object& status);
  // An event of a cluster or node pool with no operation in flight (an identity deleted while the
  // cluster is idle changes its conditions): finds the resource from the object's ARM coordinates
  // and syncs its conditions the same way.
  void SyncIdleConditions(const clusterservice::Event& event);

  // Wake the timer loop (a step is due now) or the notifier loop (a notification is queued).
  void WakeTimerLoop();
  void WakeNotifierLoop();

  void EnqueueCheck(const OperationRecord& op);
  // How a drain of the check queue ended.
  enum class Drained {
    kEmptied,      // nothing left
    kBudgetSpent,  // max_checks started: the rest is due at once, after the step's other work
    kStalled,      // a check must wait (store failure, Cluster Service delete budget): next tick
  };
  Drained DrainChecks(size_t max_checks, std::atomic<size_t>* cs_delete_budget);
  // Returns false when it needs a CS delete but the budget is spent (re-queue it).
  bool CheckOperation(const OperationRecord& op, std::atomic<size_t>* cs_delete_budget);
  void RecoverCreate(const OperationRecord& op);
  void ApplyDeadlines();
  std::optional<Duration> DeadlineOf(Request request) const;

  // Moves an operation to decide(current record)'s transition in one fenced batch (see header).
  using Decider = std::function<std::optional<Transition>(const OperationRecord&)>;
  Outcome Transit(std::string_view pk, std::string_view op_id, const Decider& decide);
  Result<std::optional<store::Document>> FindResource(std::string_view pk, std::string_view resource_id);
  // Index and notifications after a batch ended operations (billing committed in that batch).
  void AfterTerminal(const std::vector<store::Document>& ended_operations,
                     const std::vector<store::Document>& deleted_resources);

  void OnSubscriptionDeleted(const std::string& pk);
  void RunSweeps(bool exhaustive);
  // One page of a deleted subscription's resources; returns false when the sweep is finished.
  Status SweepPage(const std::string& pk, Sweep* sweep);
  void EnsureDeleteOperation(const store::Document& resource);

  void RunGc();
  // Runs RunGc when the gc interval has passed since the last pass (or `force`).
  void MaybeRunGc(bool force);
  // Adds the internalIds of every resource document of `doc_type` to `known`.
  Status KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known);
  // Deletes a listed Cluster Service object that no document knows once it is older than the window
  // (first sightings are remembered); records its href in `seen`. False when this backend stopped
  // being the coordinator.
  // With `plan`, records what it would do instead and changes nothing.
  bool CollectIfOrphan(const json::object& listed, std::string_view collection,
                       const std::unordered_set<std::string>& known, TimePoint now,
                       std::set<std::string>* seen, std::vector<OrphanCandidate>* plan = nullptr);
  // One pass of the collector (RunGc), or its plan when `plan` is given.
  Status CollectOrphans(std::vector<OrphanCandidate>* plan);

  void FeedLoop();
  void EventLoop();
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
  clusterservice::Client* const cs_;
  const Clock* const clock_;
  const Logger logger_;
  std::unique_ptr<Ownership> owned_ownership_;
  Ownership* ownership_;
  DocumentCreateRequestBuilder default_builder_;
  CreateRequestBuilder* builder_;

  OperationIndex index_;
  NotificationQueue notifications_;
  Counters counters_;
  Instruments instruments_;
  std::atomic<double> feed_lag_seconds_{0};
  std::atomic<bool> events_available_{false};
  std::atomic<bool> resync_requested_{true};
  std::atomic<bool> load_subscriptions_requested_{true};

  std::mutex pass_mu_;  // one Step() at a time
  std::mutex gc_mu_;    // one RunGc() at a time
  // Writes to one partition (Transit(), create recovery, implicit deletes) run one at a time;
  // different partitions' may run at once.
  std::mutex& ApplyMutex(std::string_view pk) {
    return apply_mu_[std::hash<std::string_view>{}(pk) % apply_mu_.size()];
  }
  std::array<std::mutex, 32> apply_mu_;

  std::mutex feed_mu_;
  std::string feed_continuation_;  // guarded by feed_mu_

  std::mutex event_mu_;
  uint64_t events_after_ = 0;  // guarded by event_mu_

  mutable std::mutex queue_mu_;
  std::deque<std::pair<std::string, std::string>> queue_;  // (pk, id); guarded by queue_mu_
  std::set<std::pair<std::string, std::string>> queued_;   // guarded by queue_mu_

  mutable std::mutex state_mu_;
  std::map<std::string, Sweep> sweeps_;                          // by partition; guarded by state_mu_
  std::set<std::pair<std::string, std::string>> delete_issued_;  // guarded by state_mu_
  std::map<std::string, TimePoint> gc_first_seen_;               // guarded by state_mu_
  TimePoint next_resync_{};                                      // guarded by state_mu_
  TimePoint next_poll_{};                                        // guarded by state_mu_
  TimePoint next_gc_{};                                          // guarded by state_mu_

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;     // guarded by run_mu_
  bool wake_ = false;         // guarded by run_mu_: work was queued
  bool notify_wake_ = false;  // guarded by run_mu_: a notification was queued
  std::vector<std::thread> threads_;
};

}  // namespace hcprp::backend
