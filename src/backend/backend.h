// The backend: drives every asynchronous operation the frontend accepted to a terminal state,
// against the Cluster Service (docs/architecture.md, "A create, end to end", "Several backends" and
// "Inside the backend").
//
// Its parts (all private to src/backend): controller.h runs the loops and steps; transition_planner.h
// plans the writes of one status change (pure); check_queue.h queues status checks;
// subscription_sweeper.h creates the Delete operations of deleted subscriptions; orphan_collector.h
// deletes Cluster Service objects no document points at; condition_sync.h copies Cluster Service
// conditions into resource documents.
//
// How it learns of work:
//  - the store's change feed (resources container): new and changed operation documents and
//    subscription documents (state Deleted starts the subscription's cleanup);
//  - the Cluster Service event stream (WatchEvents): state changes, applied through an in-memory
//    index of non-terminal operations keyed by internal ID, without touching the Cluster Service;
//  - a bounded periodic resync (resync_interval) that rebuilds the index with one cross-partition
//    query of non-terminal operations and checks each against the Cluster Service: a safety net,
//    whose cost is proportional to the operations in flight, never to idle subscriptions. While the
//    event stream has delivered every page since the last full check, only every full_check_every-th
//    resync checks every operation; the others check what events do not drive and what the index
//    did not hold;
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

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arm/documents.h"
#include "backend/notifier.h"
#include "backend/ownership.h"
#include "backend/version_controller.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::backend {

struct BackendOptions {
  // This backend's name in the leases; empty gives "backend-<uuid>". Restarted under the same name, a
  // backend takes its shards back at once and applies the events it missed (ownership.h,
  // event_follower.h); one live process per name.
  std::string owner;
  // Shard leases (see ownership.h): a dead backend's shards move to the others within about
  // lease_ttl + lease_ttl / 3.
  std::chrono::milliseconds lease_ttl{3000};
  uint32_t shards = 8;  // every backend of a store must use the same number
  // Replaces the shard leases (tests). Not owned; must outlive the backend. Null: ShardedLeases.
  Ownership* ownership = nullptr;

  // Safety-net resync (Clock time).
  Duration resync_interval = std::chrono::seconds(45);
  // While the event stream delivers every page, a periodic resync checks against the Cluster Service
  // only the operations events do not drive (credentials, unknown objects, deletes not yet issued)
  // and those the resync found new; every full_check_every-th resync, and any after a failed or
  // repositioned event stream, a lease change or a request, checks every operation in flight. 1:
  // every resync checks everything.
  uint32_t full_check_every = 8;
  // The version controller's safety-net pass (real time): every cluster's desired z-stream is
  // compared with the update service's graph at least this often; releases announced on the event
  // stream start a pass at once.
  std::chrono::milliseconds version_resync{std::chrono::minutes(5)};
  // A version pass raises up to this many clusters at once (each a PATCH to the Cluster Service).
  size_t version_concurrency = 4;
  // A version pass commits its desired versions in batches (one partition each), up to this many at
  // once. A batch waits on the store's commit rather than on a core, and batches committed together
  // share one (group commit): on SQLite 1,000 clusters take about 10 ms at 32, 15-20 ms at 4.
  size_t version_write_concurrency = 32;
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
  // An Accepted Create without internalId older than this, whose object a search does not find, lost
  // its frontend midway (or the Cluster Service was down): the backend POSTs it again with the same
  // idempotency key, which makes no second object even while its frontend is still at it.
  Duration create_recovery_grace = std::chrono::seconds(10);
  // An Update whose Cluster Service request its frontend has not confirmed (awaitingClusterService;
  // update_recovery.h), by the age of its startTime: from update_held_after on it is confirmed as
  // soon as the Cluster Service object holds the update (the request was applied, and the
  // confirmation was lost); from update_recovery_grace on, when the object does not hold it, its
  // frontend is taken for gone and the backend sends the request itself.
  Duration update_held_after = std::chrono::seconds(1);
  Duration update_recovery_grace = std::chrono::seconds(5);
  // Lifetime of the operation documents the backend creates (implicit deletes), as the frontend's.
  int64_t operation_ttl_seconds = arm::kDefaultOperationTtlSeconds;

  // Orphan collection: a Cluster Service cluster, or a node pool of a cluster that has a document,
  // that no resource document points at and older than the window is deleted.
  bool gc_enabled = true;
  Duration gc_window = std::chrono::hours(1);
  Duration gc_interval = std::chrono::minutes(10);

  // Queued checks run on up to this many threads at once (each waits on the Cluster Service and
  // on durable commits).
  size_t check_concurrency = 4;
  // The events of one page of the Cluster Service event stream are applied on this many threads
  // (started with the backend): the events of one cluster (its node pools and credentials included)
  // in stream order on one thread, different clusters at once, so that their writes share the store's
  // commits (group commit) instead of waiting for each other's. Each write is still its own fenced
  // batch; the threads mostly wait on those commits, so there are more of them than cores.
  size_t event_concurrency = 32;
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
  uint64_t recovered_updates = 0;  // unconfirmed updates resolved by the backend (update_recovery.h)
  // Delete operations the backend created: for deleted subscriptions, and for idle resources whose
  // Cluster Service object is being deleted or gone (a store restored from an older copy)
  uint64_t implicit_deletes = 0;
  uint64_t resources_deleted = 0;
  uint64_t gc_deleted = 0;
  uint64_t gc_held = 0;  // objects held for the operator (made while the store heard from no backend)
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
  bool held = false;   // made while the store heard from no backend: never deleted (docs/backup.md)
};

class Controller;  // controller.h

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
  // One pass of the version controller (version_controller.h), as its resync runs it; waits for a
  // pass already running.
  Result<VersionPassResult> VersionPassOnce();

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
  explicit Backend(std::unique_ptr<Controller> controller);

  std::unique_ptr<Controller> controller_;
};

}  // namespace hcprp::backend
