// The Cluster Service simulator's request handling, objects, state machine driver, event stream
// and fault injection, without sockets: Handle() maps a request to a response. Simulator
// (simulator.h) puts it behind an HTTP server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "http/message.h"
#include "simulator/provisioner.h"
#include "simulator/scheduler.h"
#include "simulator/state_store.h"
#include "simulator/update_service.h"
#include "simulator/versions.h"

namespace hcprp::simulator {

inline constexpr std::string_view kApiPrefix = "/api/aro_hcp/v1alpha1";
// The update service's Cincinnati graph (and the path of the public service, served the same).
inline constexpr std::string_view kGraphPath = "/api/upgrades_info/graph";
inline constexpr std::string_view kGraphPathV1 = "/api/upgrades_info/v1/graph";

struct ServiceOptions {
  const Clock* clock = nullptr;                 // required; not owned
  Provisioner* provisioner = nullptr;           // required; not owned
  TimedProvisioner* timing = nullptr;           // for /control/timing; may be null; not owned
  StateStore* store = nullptr;                  // required; not owned
  Scheduler* scheduler = nullptr;               // required; not owned
  const Logger* logger = nullptr;               // may be null; not owned
  size_t event_history = 10'000;                // events kept for resuming watchers
  std::chrono::milliseconds max_watch{60'000};  // cap on an events long-poll
  std::chrono::milliseconds max_hang{300'000};  // cap on an injected hang
  uint64_t seed = 0;                            // fault randomness; 0 = random
  const VersionCatalogue* versions = nullptr;   // the versions it starts with; null: the built-in catalogue
};

// Thread-safe. Every object change is persisted through the StateStore before it is answered or
// announced, in one commit with its events.
class Service {
 public:
  // Loads the persisted objects and schedules the transitions that were in progress.
  static Result<std::unique_ptr<Service>> Open(const ServiceOptions& options);
  ~Service();

  http::Response Handle(http::Request&& request);
  // The OCM-style answer to a request whose body is over the server's limit.
  static http::Response TooLarge(const http::Request& header_only);
  // Wakes long-polls and injected hangs so that they answer at once; later ones answer 503.
  void Shutdown();

  // Moves an object to `state` now, as a provisioning engine driving states asynchronously would
  // (state kGone removes it). The provisioner is then asked for the next step as usual.
  Status Transition(const std::string& href, const std::string& state, const std::string& error_code = "",
                    const std::string& error_message = "");

  // Merges `fields` into the object's status (e.g. {"conditions": [...]} from a provisioning engine),
  // persists them and announces the object as an event in its current state. A status field the
  // simulator owns ("state", "provision_error_code", ...) cannot be set. No event when nothing changes.
  // NotFound for an unknown object; InvalidArgument for a credential or a simulator-owned field.
  Status SetStatusFields(const std::string& href, const json::object& fields);

  // The update service: the version catalogue now, its upgrade edges and tips. Thread-safe.
  const UpdateService& updates() const { return *updates_; }
  // Publishes a release (README.md, "Versions"), persisted with an event for each new Version in one
  // commit. Returns the new Version IDs (none when the release was already in those groups);
  // InvalidArgument with the reason when the catalogue refuses it.
  Result<std::vector<std::string>> PublishRelease(const Release& release);
  // Withdraws (or restores) the upgrade edge, persisted with an "UpgradeEdge" event when it changes;
  // InvalidArgument when no rule of the catalogue gives that edge.
  Status SetEdgeWithdrawn(const std::string& from_raw, const std::string& to_raw, bool withdrawn);

  size_t object_count() const;
  uint64_t last_sequence() const;

 private:
  struct Record;
  struct Txn;
  struct EventRecord {
    uint64_t sequence;
    std::shared_ptr<const json::object> item;  // {sequence, href, kind, state, object}; never changed
  };
  struct ProvisioningFault {
    int64_t id = 0;
    int64_t remaining = -1;  // -1: no count limit
    double fraction = 1.0;
    std::string code;
    std::string message;
    std::string state;                    // "error" or "recoverable_error"
    std::vector<std::string> kinds;       // empty: all
    std::vector<std::string> operations;  // create, update, delete
  };
  struct HttpFaults {
    int64_t error_count = 0;  // answer the next N calls with `status`
    double error_fraction = 0;
    int64_t error_after_count = 0;  // act on the next N calls, then answer `status` (lost answers)
    double error_after_fraction = 0;
    int status = 503;
    double delay_fraction = 0;
    int64_t delay_ms = 0;
    double hang_fraction = 0;
    int64_t hang_ms = 120'000;
    std::string path_prefix = std::string(kApiPrefix);
    std::vector<std::string> methods;  // empty: all
  };
  enum class HttpFault { kNone, kErrorBefore, kErrorAfter };

  explicit Service(const ServiceOptions& options);
  Status Load();

  http::Response HandleApi(const http::Request& req, std::string_view path, std::string_view query);
  // The control API (service_control.cpp): a route table and its handlers.
  struct ControlApi;
  http::Response HandleControl(const http::Request& req, std::string_view path);

  // Collections and objects.
  http::Response ListObjects(std::string_view kind, const std::string& parent, std::string_view query);
  http::Response CreateObject(const http::Request& req, std::string_view kind, const std::string& collection,
                              const std::string& parent);
  http::Response GetObject(const std::string& href, std::string_view kind);
  http::Response GetStatus(const std::string& href, std::string_view kind);
  http::Response UpdateObject(const http::Request& req, const std::string& href, std::string_view kind);
  // A change to a cluster whose control plane upgrades: applied without a new operation; another
  // upgrade target is refused.
  http::Response UpdateUpgradingLocked(const std::string& href, json::object merged,
                                       const std::string& upgrade_to) HCPRP_REQUIRES(mu_);
  http::Response DeleteObject(const std::string& href, std::string_view kind);
  http::Response RequestAdminCredential(const http::Request& req, const std::string& cluster_href);
  void SetCredentialStatusLocked(Txn& txn, Record& rec, std::string status, TimePoint at) HCPRP_REQUIRES(mu_);
  void RemoveClusterLocked(Txn& txn, const std::string& cluster_href) HCPRP_REQUIRES(mu_);
  http::Response RevokeCredentials(const std::string& cluster_href);
  http::Response GetRevocation(const std::string& cluster_href);
  http::Response ListCertificates(const std::string& cluster_href);
  http::Response CheckCertificate(const http::Request& req, const std::string& cluster_href);
  http::Response ListVersions(std::string_view query);
  http::Response GetVersion(std::string_view id);
  http::Response UpgradeGraph(const http::Request& req, std::string_view query);
  // Persists `change` with the events of `txn` in one commit, then makes it the update service's
  // state; nothing (no event either) when it changes nothing.
  Status CommitUpdateLocked(Txn& txn, UpdateChange change) HCPRP_REQUIRES(mu_);
  http::Response WatchEvents(std::string_view query);

  // Under mu_.
  Record* FindLocked(const std::string& href, std::string_view kind) HCPRP_REQUIRES(mu_);
  bool HasChildrenLocked(const std::string& cluster_href) const HCPRP_REQUIRES(mu_);
  Record& TouchLocked(Txn& txn, const std::string& href) HCPRP_REQUIRES(mu_);
  void InsertLocked(Txn& txn, Record record) HCPRP_REQUIRES(mu_);
  void RemoveLocked(Txn& txn, const std::string& href) HCPRP_REQUIRES(mu_);
  void BeginOperationLocked(Txn& txn, Record& rec, Operation op, bool allow_fault) HCPRP_REQUIRES(mu_);
  // Enters `state` as of `at` (a step's due time, so that late timers catch up; now for API calls).
  void EnterStateLocked(Txn& txn, Record& rec, std::string state,
                        TimePoint at) HCPRP_REQUIRES(mu_);  // by value: callers pass rec.next_state
  void PlanLocked(Record& rec) HCPRP_REQUIRES(mu_);
  // Clusters and node pools being created: a minor-only version.id becomes the exact ID of that minor's
  // newest enabled z-stream in its channel group. Returns the raw version the object installs ("" for
  // other kinds, or a version the catalogue does not resolve).
  std::string PinVersion(json::object& object) const;
  // The raw version a PATCH (`patch`, which makes `merged`) upgrades a cluster or node pool to: the one
  // its version.id resolves to, when the PATCH sets version.id and that is not the newest Completed
  // version (also the same version.id again after a failed upgrade: a retry). "" when it starts none.
  // A cluster PATCH naming a minor only ("openshift-v4.21"): the z-stream the version selection picks
  // for it, set in `patch` as an exact ID when the minor changes, or nothing changed when it is the
  // cluster's minor already; the reason it is refused (no upgrade edge from the running version into
  // that minor's channel), else nullopt.
  std::optional<std::string> PinMinorChange(const json::object& current, json::object& patch) const
      HCPRP_REQUIRES(mu_);
  std::string UpgradeTarget(std::string_view kind, const json::object& patch,
                            const json::object& merged) const;
  void AddEventLocked(Txn& txn, const std::string& href, std::string_view kind, const std::string& state,
                      json::object object) HCPRP_REQUIRES(mu_);
  Status CommitLocked(Txn& txn) HCPRP_REQUIRES(mu_);
  void ScheduleLocked(const Record& rec) HCPRP_REQUIRES(mu_);
  void OnStepDue(const std::string& href);
  void OnRevocationDue(const std::string& href);
  json::object RevocationLocked(const Record& rec) const HCPRP_REQUIRES(mu_);
  std::optional<ProvisioningFault> DrawProvisioningFaultLocked(std::string_view kind, Operation op)
      HCPRP_REQUIRES(mu_);

  HttpFault DrawHttpFault(const http::Request& req, std::string_view path, int* status,
                          std::chrono::milliseconds* delay, bool* hang);
  // Sleeps up to `d` unless Shutdown() comes first.
  void InterruptibleSleep(std::chrono::milliseconds d);

  http::Response Ocm(http::StatusCode status, const json::value& body) const;
  http::Response OcmError(http::StatusCode status, const std::string& reason) const;
  static http::Response ControlJson(http::StatusCode status, const json::value& body);

  // The catalogue now (held: it stays valid while the update service moves on).
  std::shared_ptr<const VersionCatalogue> versions() const { return updates_->catalogue(); }

  const ServiceOptions options_;
  std::unique_ptr<UpdateService> updates_;  // set by Load(), then constant; changed under mu_ only

  mutable Mutex mu_;
  CondVar events_cv_;
  std::map<std::string, Record> records_ HCPRP_GUARDED_BY(mu_);           // by href
  std::map<std::string, std::string> idempotency_ HCPRP_GUARDED_BY(mu_);  // collection + '\n' + key -> href
  std::deque<EventRecord> history_ HCPRP_GUARDED_BY(mu_);
  uint64_t last_sequence_ HCPRP_GUARDED_BY(mu_) = 0;
  uint64_t first_retained_ HCPRP_GUARDED_BY(mu_) = 0;  // the smallest `after` a watcher can still resume from
  uint64_t next_created_ HCPRP_GUARDED_BY(mu_) = 1;

  std::atomic<bool> shutdown_{false};
  Mutex sleep_mu_;  // for shutdown_cv_ only
  CondVar shutdown_cv_;

  // Faults (faults_mu_ is taken after mu_ when both are needed).
  mutable Mutex faults_mu_;
  std::vector<ProvisioningFault> provisioning_faults_ HCPRP_GUARDED_BY(faults_mu_);
  int64_t next_fault_id_ HCPRP_GUARDED_BY(faults_mu_) = 1;
  HttpFaults http_faults_ HCPRP_GUARDED_BY(faults_mu_);
  std::mt19937_64 rng_ HCPRP_GUARDED_BY(faults_mu_);
};

}  // namespace hcprp::simulator
