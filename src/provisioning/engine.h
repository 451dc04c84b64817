// The provisioning engine behind the Cluster Service simulator, in the style of HyperShift + CAPZ:
// every cluster gets a control plane (managed resource group, API public IP, load balancer, role
// assignment) and every node pool its machines, each machine its services in order (public IP, network
// interface, disk, virtual machine, role assignment, extension), deleted in reverse order.
//
// Asynchronous reconciliation (CAPZ "async" design): a service call waits at most client_timeout for
// its long-running operation; one not done by then is stored as a future {type, resource, token} and
// picked up by a later reconcile (also after a restart: futures are in the snapshot), never started
// twice (a create without a future first reads the resource and adopts its running operation).
// Reconciles never block a worker: the "wait up to client_timeout" is a requeue at the operation's
// completion time, so `concurrency` workers keep thousands of operations in flight.
//
// Conditions per service ("<Service>Ready", reasons Creating, Failed, Deleting, Deleted,
// DeletionFailed) are kept per machine and rolled up per node pool and cluster, together with
// "AzureIdentityValid"; they drive the Cluster Service states through the StateSink.
//
// Identities that disappear: every call on a cluster's resources acts as the cluster's
// CAPZ identity. A 401 (identity deleted: AADSTS700016) or 403 (permissions removed) sets
// AzureIdentityValid=False. A deletion whose calls keep failing with such an error for longer than
// orphan_threshold is orphaned: its cleanup is skipped (logged, counted), and the cluster's managed
// resource group is deleted by the first-party identity, taking everything in it. Missing permissions
// are treated like a missing identity for deletion (both make the credentials invalid), but only after
// the same threshold, since a 403 may be RBAC propagation; during creation both simply fail and retry.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "provisioning/azure.h"
#include "simulator/provisioner.h"

namespace hcprp::provisioning {

struct Unit;         // unit.h
struct UnitService;  // unit.h
struct UnitPass;     // unit_step.h

// Where the engine pushes Cluster Service state changes: Service::Transition in the simulator.
// Called without any engine lock held; the sink may call back into Provisioner::Next().
class StateSink {
 public:
  virtual ~StateSink() = default;
  virtual Status Transition(const std::string& href, const std::string& state, const std::string& error_code,
                            const std::string& error_message) = 0;
  // The object's rolled-up status fields changed: status.conditions and, for clusters,
  // status.managed_identities. Default: ignored.
  virtual void PublishStatus(const std::string& /*href*/, const json::object& /*fields*/) {}
};

// Adapts a function with Service::Transition's signature.
class FunctionStateSink final : public StateSink {
 public:
  using Fn =
      std::function<Status(const std::string&, const std::string&, const std::string&, const std::string&)>;
  explicit FunctionStateSink(Fn fn) : fn_(std::move(fn)) {}
  Status Transition(const std::string& href, const std::string& state, const std::string& code,
                    const std::string& message) override {
    return fn_(href, state, code, message);
  }

 private:
  Fn fn_;
};

struct EngineOptions {
  const Clock* clock = nullptr;     // required; not owned
  SimulatedAzure* azure = nullptr;  // required; not owned
  const Logger* logger = nullptr;   // may be null; not owned
  // Where objects and units persist, committed with the simulated Azure's changes of the same step
  // (not owned; null: nothing persists). A legacy DIR/engine.json beside it is imported once, removed.
  simulator::StateDb* state = nullptr;
  double time_scale = 1.0;  // scales the durations below
  Duration client_timeout = std::chrono::seconds(2);
  // How long a new or changed object stays in validating / validating_update (the Cluster Service's
  // checks before anything is provisioned) before the engine starts on it.
  Duration validation_time = Duration::zero();
  Duration orphan_threshold = std::chrono::minutes(10);
  Duration backoff_base = std::chrono::seconds(5);
  Duration backoff_max = std::chrono::minutes(2);
  int concurrency = 10;  // reconcile workers
  // A node pool's or cluster's roll-up after one of its machines made progress (not finished) waits
  // this long (scaled), so that the progress of many machines is rolled up once; a machine that
  // finished, and every state change of the object itself, is rolled up at once.
  Duration rollup_interval = std::chrono::seconds(2);
  // Credential issue / revocation times answered to the simulator.
  Duration credential_issue_time = std::chrono::seconds(10);
  Duration revocation_time = std::chrono::seconds(60);
  // How long a control plane upgrade takes (nothing in Azure: HyperShift rolls the control plane's pods),
  // drawn once per upgrade, already scaled; also how long an upgrade made to fail runs before it fails.
  // Null: no time. Called with the engine's lock held.
  std::function<Duration()> control_plane_upgrade_time;
};

struct EngineMetrics {
  int64_t reconciles = 0;
  int64_t calls = 0;
  int64_t futures_stored = 0;  // operations not done within the client timeout
  int64_t completed_within_timeout = 0;
  int64_t throttled = 0;
  int64_t failures = 0;
  int64_t credential_failures = 0;
  int64_t orphaned_machines = 0;  // machine deletions skipped because of invalid credentials
  int64_t orphaned_control_planes = 0;
  int64_t first_party_group_deletions = 0;
  int64_t transitions = 0;
  json::object ToJson() const;
  // Adds every counter of `other`.
  EngineMetrics& operator+=(const EngineMetrics& other);
};

// Thread-safe.
class Engine final : public simulator::Provisioner {
 public:
  // Loads the objects and units (machines, futures) of options.state; every loaded unit is queued.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options);
  ~Engine() override;  // Stop()

  // REQUIRES: before Start() or RunDueForTest(). Not owned; must outlive the engine's activity.
  void Attach(StateSink* sink);
  // Starts `concurrency` worker threads that reconcile as work comes due by the clock.
  void Start();
  // Stops the workers (a reconcile in progress finishes) and commits what is left. Idempotent.
  void Stop();
  // Without workers: runs, in the calling thread, every reconcile due by the clock now (and those they
  // make due now), at most max_rounds passes. Returns how many ran.
  size_t RunDueForTest(int max_rounds = 1000);
  // When the next piece of work is due, if any.
  std::optional<TimePoint> NextDueForTest() const;

  // simulator::Provisioner: records what the simulator asks for and answers nullopt; the engine moves
  // the object itself. Never calls back into the simulator.
  std::optional<simulator::Step> Next(const simulator::ObjectInfo& object) override;
  Duration CredentialIssueTime() override;
  Duration RevocationTime() override;

  // Rolled-up conditions of an object ([] when unknown).
  json::array Conditions(const std::string& href) const;
  // The engine's view of a cluster: its managed resource group, conditions, node pools with machines,
  // their futures and conditions, orphaned machines. NotFound when unknown.
  Result<json::object> ClusterView(const std::string& cluster_href) const;
  EngineMetrics metrics() const;
  size_t object_count() const;
  size_t machine_count() const;
  // Commits what changed and was not committed yet (every reconcile commits its own changes; this
  // covers what Next() recorded). No-op without a state.
  Status Flush();
  // After a restart, once the Cluster Service has announced its objects (Next): objects loaded from the
  // state that it no longer has are deleted from Azure without telling it (it has nothing to move).
  // Returns how many.
  size_t DeleteUnannounced();

 private:
  struct Obj;
  struct Pending;  // transitions to apply outside the lock
  explicit Engine(const EngineOptions& options);
  Status Load();
  Status LoadDocs(const json::object& root) HCPRP_REQUIRES(mu_);
  static std::string EncodeObj(const Obj& o);
  static std::string EncodeUnit(const Unit& u);
  // One commit: copies of the dirty objects and the documents of the dirty units, taken under mu_
  // (REQUIRES) and written outside it by WriteBatch with the simulated Azure's changes taken right
  // after, in the order taken (tickets).
  struct Batch;
  Batch TakeBatchLocked() HCPRP_REQUIRES(mu_);
  // Writes `batch` after every batch taken before it (with those waiting beside it in one transaction),
  // then reaches the crash points of the steps it holds. Without mu_.
  Status WriteBatch(Batch& batch);
  // TakeBatchLocked and the Azure changes, then WriteBatch, with mu_ released meanwhile.
  Status CommitNow() HCPRP_REQUIRES(mu_);
  // The end of a step: commits now when `must_commit` (its transitions follow), else leaves it to the
  // committer (woken when the group is full). May release mu_ meanwhile.
  void EndStep(bool must_commit) HCPRP_REQUIRES(mu_);
  // Commits the unit steps left by EndStep within kGroupCommitInterval of the oldest, or at once when
  // kGroupCommitSize objects and units are dirty: its own thread, so that neither the workers nor the
  // dispatcher spend their time writing.
  void CommitLoop();
  // The end of running `key`: runs it again if it came due meanwhile.
  void FinishKeyLocked(const std::string& key) HCPRP_REQUIRES(mu_);
  // Marks an object and its cluster as changed (the units its reconcile makes, marks or removes are
  // marked where that happens).
  void TouchObjectLocked(const std::string& href) HCPRP_REQUIRES(mu_);
  // Marks a unit as changed (or removed); its document is encoded at the end of the step.
  void TouchUnitLocked(const std::string& key) HCPRP_REQUIRES(mu_);
  void EncodeTouchedUnitsLocked() HCPRP_REQUIRES(mu_);

  void EnqueueLocked(const std::string& key, TimePoint at) HCPRP_REQUIRES(mu_);
  // One reconcile of a unit: BeginUnitPass reads it, the steps of unit_step.h call Azure, and
  // CommitUnitPass stores what they leave (`original`: the services as read) and queues what follows.
  void ReconcileUnit(const std::string& unit_key);
  std::optional<UnitPass> BeginUnitPass(const std::string& unit_key);
  void CommitUnitPass(const std::string& unit_key, const std::vector<UnitService>& original, UnitPass pass,
                      TimePoint now);
  // Moves u's services into `stored` (the engine's unit) and marks it changed: with `doc` (u encoded)
  // when u's other fields are still the engine's, else to be encoded again.
  void StoreUnitLocked(const std::string& unit_key, Unit& u, std::string doc, Unit& stored)
      HCPRP_REQUIRES(mu_);
  // What the pass saw of the cluster's credentials; true when that changed them.
  bool CommitCredentialsLocked(const UnitPass& pass, TimePoint now) HCPRP_REQUIRES(mu_);
  // Queues the roll-up of `owner` after a change of `unit` (the engine's): at once when it finishes the
  // owner or changed the credentials, else after rollup_interval.
  void EnqueueRollUpLocked(const Unit& unit, const std::string& owner, bool creds_changed, TimePoint now)
      HCPRP_REQUIRES(mu_);
  void ReconcileObjectLocked(Obj& obj, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  // The object `href` of a queue key, when the engine still has it: reconciled, and marked changed.
  void ReconcileHrefLocked(const std::string& href, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  void ReconcileClusterLocked(Obj& obj, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  void ReconcilePoolLocked(Obj& obj, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  // True while obj is still being validated (it is queued again for when validation ends).
  bool ValidatingLocked(Obj& obj) HCPRP_REQUIRES(mu_);
  // Whether obj's upgrade phase (EngineOptions::control_plane_upgrade_time) is over; starts it the first
  // time, and queues obj for its end.
  bool UpgradePhaseOverLocked(Obj& obj) HCPRP_REQUIRES(mu_);
  // A new machine of `pool` at its version, queued; or one of its machines marked for deletion, queued.
  void AddMachineLocked(Obj& pool, const Obj& cluster) HCPRP_REQUIRES(mu_);
  void RetireMachineLocked(const std::string& key) HCPRP_REQUIRES(mu_);
  // Creates or marks for deletion the machines that make `pool` have `desired` of them; true when none is
  // left being deleted.
  bool ScaleLocked(Obj& pool, const Obj& cluster) HCPRP_REQUIRES(mu_);
  // One step of a node pool's rolling upgrade (PlanRoll); true when no machine is left to replace.
  bool RollLocked(Obj& pool, const Obj& cluster) HCPRP_REQUIRES(mu_);
  // A node pool's upgrade made to fail: its phase, then the failure; no machine changes.
  void FailUpgradeLocked(Obj& pool, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  void MoveLocked(Obj& obj, const std::string& state, std::vector<Pending>& out, const std::string& code = "",
                  const std::string& message = "") HCPRP_REQUIRES(mu_);
  void Apply(std::vector<Pending>& out);
  Unit MakeMachineLocked(const Obj& pool, const Obj& cluster, int64_t index) HCPRP_REQUIRES(mu_);
  Unit MakeControlPlaneLocked(const Obj& cluster) HCPRP_REQUIRES(mu_);
  // Recomputes obj's conditions; queues them for the sink when they changed.
  void RollUpLocked(Obj& obj, std::vector<Pending>& out) HCPRP_REQUIRES(mu_);
  json::object UnitJsonLocked(const Unit& u) const HCPRP_REQUIRES(mu_);
  Duration Scaled(Duration d) const;
  void WorkerLoop();
  // Moves due timers to ready_ and sleeps until the next one (one thread, so that workers wait on
  // ready work only and a timer wakes one worker, not all of them).
  void DispatchLoop();
  void RunKey(const std::string& key) HCPRP_REQUIRES(mu_);

  const EngineOptions options_;
  StateSink* sink_ = nullptr;

  // Lock order: the simulator's lock (Next() is called under it), then mu_, then the SimulatedAzure's.
  // mu_ is never held while calling the sink.
  mutable Mutex mu_;
  CondVar timer_cv_;  // the dispatcher's: a timer earlier than it sleeps until
  CondVar ready_cv_;  // the workers': ready_ is not empty
  CondVar dirty_cv_;  // the committer's: the group is full, or the first step is dirty
  // By href (ordered: a cluster's children follow it).
  std::map<std::string, Obj> objs_ HCPRP_GUARDED_BY(mu_);
  std::unordered_map<std::string, Unit> units_ HCPRP_GUARDED_BY(mu_);  // by unit key
  std::multimap<TimePoint, std::string> timers_ HCPRP_GUARDED_BY(mu_);
  // Key -> earliest due time queued.
  std::unordered_map<std::string, TimePoint> queued_ HCPRP_GUARDED_BY(mu_);
  std::deque<std::string> ready_ HCPRP_GUARDED_BY(mu_);  // due keys, in due order
  std::unordered_set<std::string> in_ready_ HCPRP_GUARDED_BY(mu_);
  std::unordered_set<std::string> running_ HCPRP_GUARDED_BY(mu_);
  std::unordered_set<std::string> rerun_ HCPRP_GUARDED_BY(mu_);  // keys that came due while running
  // A step whose transitions wait for its commit: the key stays running until they are told.
  struct Deferred {
    std::string key;
    std::vector<Pending> out;
  };
  std::vector<Deferred> awaiting_commit_ HCPRP_GUARDED_BY(mu_);  // for the committer
  std::deque<Deferred> applies_ HCPRP_GUARDED_BY(mu_);           // committed, for the workers
  bool committer_running_ HCPRP_GUARDED_BY(mu_) = false;
  TimePoint dispatcher_wakes_ HCPRP_GUARDED_BY(mu_) = TimePoint::max();  // min() while the dispatcher runs
  EngineMetrics metrics_ HCPRP_GUARDED_BY(mu_);
  std::set<std::string> dirty_objs_ HCPRP_GUARDED_BY(mu_);  // changed since the last commit
  // Units changed since the last commit -> their document as of the change ("" until encoded: at the
  // end of the step that changed them, or when the batch is taken).
  std::unordered_map<std::string, std::string> dirty_units_ HCPRP_GUARDED_BY(mu_);
  std::vector<std::string> unencoded_units_ HCPRP_GUARDED_BY(mu_);  // touched by the step running now
  // The first step left to the committer.
  std::chrono::steady_clock::time_point group_started_ HCPRP_GUARDED_BY(mu_) = {};
  uint64_t next_ticket_ HCPRP_GUARDED_BY(mu_) = 1;
  // Crash points of the steps not committed yet.
  std::vector<std::string> committed_points_ HCPRP_GUARDED_BY(mu_);
  std::unordered_set<std::string> announced_ HCPRP_GUARDED_BY(mu_);  // hrefs Next() was called with
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  Mutex take_mu_;    // before mu_; orders the takes (tickets, then the Azure changes)
  Mutex commit_mu_;  // after mu_ is released; orders the writes
  CondVar commit_cv_;
  uint64_t written_ticket_ HCPRP_GUARDED_BY(commit_mu_) = 0;
  // Taken, waiting to be written (owners wait too).
  std::map<uint64_t, Batch*> queued_batches_ HCPRP_GUARDED_BY(commit_mu_);
  bool writing_ HCPRP_GUARDED_BY(commit_mu_) = false;
  // The object documents the database holds, as last written; read and written only by the thread
  // that set writing_, outside commit_mu_.
  std::unordered_map<std::string, std::string> written_objs_;
  std::vector<std::thread> workers_;
  std::thread dispatcher_;
  std::thread committer_;
  std::atomic<bool> started_{false};
};

}  // namespace hcprp::provisioning
