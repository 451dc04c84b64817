// A simulated Azure for the provisioning engine: resource groups, the customer's network and managed
// identities, and the resources the engine creates in a cluster's managed resource group. Every create
// and delete is a long-running operation whose duration is drawn from a per-type latency distribution;
// failures and throttling (429 + Retry-After) can be injected per resource type and operation.
//
// Operations complete by the clock alone: nothing runs in the background. Any call first settles the
// operations whose completion time has passed, so a FakeClock drives it fully.
//
// Callers act as an identity: the resource ID of a user-assigned managed identity (which must exist and
// hold its permissions, else 401 AADSTS700016 or 403 AuthorizationFailed), or kFirstParty, the
// resource provider's own application, which always may act.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/result.h"
#include "simulator/provisioner.h"
#include "simulator/state_db.h"

namespace hcprp::provisioning {

inline constexpr std::string_view kFirstParty = "first-party";

enum class ResourceType {
  kResourceGroup,
  kVirtualNetwork,
  kSubnet,
  kNetworkSecurityGroup,
  kManagedIdentity,
  kLoadBalancer,
  kPublicIp,
  kNetworkInterface,
  kDisk,
  kVirtualMachine,
  kRoleAssignment,
  kVmExtension,
};
inline constexpr int kResourceTypeCount = 12;

// "Microsoft.Network/publicIPAddresses", ...
std::string_view ArmType(ResourceType t);
// Short names used in conditions ("PublicIP" -> "PublicIPReady") and in the control API ("publicIP").
std::string_view ConditionPrefix(ResourceType t);
std::string_view ShortName(ResourceType t);
Result<ResourceType> ParseShortName(std::string_view name);

// The simulator's timing profile (simulator::ProfileName, simulator::ParseProfile), for Azure's
// operations: instant: every operation completes at once; demo: a fraction of a second to a few
// seconds; realistic: log-normal durations with medians and p99s of real Azure operations (VM create
// ~2 min).
using LatencyProfile = simulator::Profile;

struct AzureOptions {
  const Clock* clock = nullptr;    // required; not owned
  const Logger* logger = nullptr;  // may be null; not owned
  LatencyProfile profile = LatencyProfile::kDemo;
  double time_scale = 1.0;  // multiplies every latency and Retry-After
  // Longest wait an operation status answer advises (Retry-After) before the caller polls again,
  // before scaling. The advice is min(this, time left), as Azure's polling hint would be.
  Duration poll_interval = std::chrono::seconds(10);
  // Where resources and operations persist (not owned; null: nothing persists). A legacy
  // DIR/azure.json in its directory is imported once and removed.
  simulator::StateDb* state = nullptr;
  uint64_t seed = 0;  // 0: random
};

// The answer to a create, delete or poll.
struct AzureCall {
  enum class Outcome { kDone, kPending, kFailed, kThrottled };
  Outcome outcome = Outcome::kDone;
  std::string token;       // the operation (kPending, and kDone/kFailed of a polled operation)
  TimePoint done_at{};     // when a pending operation will complete
  Duration retry_after{};  // kPending and kThrottled: when to ask again
  int http_status = 200;   // 401/403 for credential failures, 404, 409, 429, 500...
  std::string code, message;

  bool ok() const { return outcome == Outcome::kDone; }
  // The caller's identity is missing (401) or lacks the permission (403).
  bool credential_error() const {
    return outcome == Outcome::kFailed && (http_status == 401 || http_status == 403);
  }
};

// An injected fault. kind "fail": matching operations start and then end Failed with code/message;
// kind "throttle": matching calls answer 429 with Retry-After and start nothing.
struct AzureFault {
  int64_t id = 0;
  std::optional<ResourceType> type;  // none: every type
  std::string operation = "create";  // "create" or "delete"
  std::string kind = "fail";         // "fail" or "throttle"
  int64_t remaining = 1;             // -1: until cleared
  double fraction = 1.0;
  std::string code = "InternalServerError";
  std::string message = "An internal error occurred.";
  Duration retry_after = std::chrono::seconds(10);  // throttle; before scaling
};

// Thread-safe.
// A copy of the simulated Azure's records that changed (resources with their operation in progress,
// the metadata), taken by SimulatedAzure::TakeChanges. Movable, encoded without any lock.
class AzureChanges {
 public:
  AzureChanges();
  ~AzureChanges();
  AzureChanges(AzureChanges&&) noexcept;
  AzureChanges& operator=(AzureChanges&&) noexcept;
  // Appends one document per changed resource (a delete for one that is gone), and the metadata.
  void EncodeInto(simulator::StateBatch& batch) const;

 private:
  friend class SimulatedAzure;
  struct Data;
  std::unique_ptr<Data> data_;
};

class SimulatedAzure {
 public:
  // Loads the resources and operations of `options.state`.
  static Result<std::unique_ptr<SimulatedAzure>> Open(const AzureOptions& options);
  ~SimulatedAzure();

  // Long-running operations. `id` is an ARM resource ID (compared case-insensitively). A create of a
  // resource that exists answers its running operation (PUT is idempotent) or kDone; a create of a
  // Failed resource starts a new attempt. A delete of a missing resource answers kDone.
  AzureCall BeginCreate(std::string_view caller, ResourceType type, const std::string& id);
  AzureCall BeginDelete(std::string_view caller, const std::string& id);
  AzureCall Poll(std::string_view caller, const std::string& token);
  // "Creating", "Succeeded", "Failed", "Deleting", or nullopt when absent.
  std::optional<std::string> ProvisioningState(const std::string& id);
  // The operation in progress on a resource, if any.
  std::optional<std::string> ActiveOperation(const std::string& id);

  // Calls answered since start, by service (resource type), call ("create", "delete", "poll") and
  // outcome ("succeeded", "accepted", "failed", "unauthorized", "throttled"); zero counts left out.
  struct CallCount {
    ResourceType type;
    std::string_view call;
    std::string_view outcome;
    int64_t count;
  };
  std::vector<CallCount> CallCounts() const;

  // The customer's side. Ensure* creates the resource (and its resource group) at once unless it
  // exists; identities deleted through DeleteIdentity stay deleted.
  void EnsureCustomerResource(ResourceType type, const std::string& id);
  // What the managed-identity service tells of a user-assigned identity, as
  // {"client_id", "principal_id"} (stable UUIDs derived from its resource ID); nullopt when it does not
  // exist (never made, or deleted).
  std::optional<json::object> IdentityIds(const std::string& id) const;
  Status DeleteIdentity(const std::string& id);
  Status SetIdentityPermissions(const std::string& id, bool granted);

  int64_t AddFault(AzureFault fault);
  void ClearFaults();
  json::array Faults() const;

  // Resources whose ID starts with `prefix` (lower-cased compare), as
  // [{id, type, provisioningState, createdTime, createAttempts}]; "" lists all.
  json::array List(std::string_view prefix) const;
  size_t resource_count() const;
  size_t operations_in_flight() const;
  // How many create operations were started on `id` over its lifetime (survives restarts).
  int64_t CreateStarts(const std::string& id) const;
  // The largest CreateStarts over every resource that ever existed.
  int64_t MaxCreateStarts() const;
  // Sum of the durations drawn for operations started so far, per resource, in ms, keyed by ID
  // (creates only): lets a benchmark compute the critical path implied by the draws.
  std::map<std::string, int64_t> CreateDurationsMs() const;

  // What changed since the last call, copied under the lock, for a caller that commits it in one
  // transaction with its own changes of the same step; encoding it into documents (AzureChanges::
  // EncodeInto) happens later, outside every lock. Empty without a state.
  AzureChanges TakeChanges();
  // Commits the changes nobody took yet (the control API's). No-op without a state.
  Status Flush();

 private:
  friend class AzureChanges;
  struct Resource;
  struct Operation;
  explicit SimulatedAzure(const AzureOptions& options);
  Status Load();
  Status LoadLegacyJson(const json::object& root) HCPRP_REQUIRES(mu_);
  void TouchLocked(const std::string& key) HCPRP_REQUIRES(mu_) { dirty_resources_.insert(key); }

  void SettleLocked(TimePoint now) HCPRP_REQUIRES(mu_);
  // `action` is "<ArmType(type)>/<verb>", or `verb` alone when type is nullopt (built only for errors).
  std::optional<AzureCall> CheckCallerLocked(std::string_view caller, std::optional<ResourceType> type,
                                             std::string_view verb, const std::string& scope) const
      HCPRP_REQUIRES(mu_);
  std::optional<AzureFault> DrawFaultLocked(ResourceType type, std::string_view op, std::string_view kind)
      HCPRP_REQUIRES(mu_);
  Duration SampleLocked(ResourceType type, bool is_delete) HCPRP_REQUIRES(mu_);
  Duration Scaled(Duration d) const;
  AzureCall PendingLocked(const Operation& op, TimePoint now) const HCPRP_REQUIRES(mu_);
  AzureCall ThrottledCall(const AzureFault& f) const;
  // Adds a customer-owned resource that exists at once.
  void AddCustomerLocked(const std::string& key, std::string id, ResourceType type, TimePoint now)
      HCPRP_REQUIRES(mu_);
  // Starts r's create or delete as a long-running operation (a fault may make it fail); `poll_now` says
  // the operation was drawn with no latency and is to be polled to its end at once, without mu_.
  AzureCall StartLocked(ResourceType type, const std::string& key, Resource& r, bool is_delete, TimePoint now,
                        bool& poll_now) HCPRP_REQUIRES(mu_);
  // The calls counted apart (calls_' second index).
  enum Call : size_t { kCreateCall, kDeleteCall, kPollCall, kCalls };
  // A create or a delete: BeginCreateLocked or BeginDeleteLocked under mu_, then (without mu_) the poll
  // of an operation drawn with no latency, then its count. `type` is the create's (a delete finds its own).
  AzureCall Begin(std::string_view caller, Call call, ResourceType type, const std::string& id);
  // The Begin* calls under mu_: `poll_now` as StartLocked's; the delete reports the type it saw.
  AzureCall BeginCreateLocked(std::string_view caller, ResourceType type, const std::string& id,
                              bool& poll_now) HCPRP_REQUIRES(mu_);
  AzureCall BeginDeleteLocked(std::string_view caller, const std::string& id, ResourceType& type,
                              bool& poll_now) HCPRP_REQUIRES(mu_);
  // The poll without its counting; it reports the resource type it saw.
  AzureCall PollUncounted(std::string_view caller, const std::string& token, ResourceType& type);
  // Adds `c` to calls_. Lock-free.
  void Count(ResourceType type, Call call, const AzureCall& c);

  const AzureOptions options_;

  static constexpr size_t kOutcomes = 5;  // succeeded, accepted, failed, unauthorized, throttled
  std::array<std::array<std::array<std::atomic<int64_t>, kOutcomes>, kCalls>, kResourceTypeCount> calls_{};

  mutable Mutex mu_;
  std::map<std::string, Resource> resources_ HCPRP_GUARDED_BY(mu_);    // by lower-cased ID
  std::map<std::string, Operation> operations_ HCPRP_GUARDED_BY(mu_);  // by token
  std::multimap<TimePoint, std::string> due_ HCPRP_GUARDED_BY(mu_);    // unsettled operations by completion
  std::unordered_map<std::string, int64_t> create_starts_ HCPRP_GUARDED_BY(mu_);  // lower-cased ID -> count
  // Lower-cased ID -> last drawn create.
  std::unordered_map<std::string, int64_t> create_duration_ms_ HCPRP_GUARDED_BY(mu_);
  std::map<std::string, bool> deleted_identities_ HCPRP_GUARDED_BY(mu_);  // tombstones for Ensure*
  std::vector<AzureFault> faults_ HCPRP_GUARDED_BY(mu_);
  int64_t next_fault_id_ HCPRP_GUARDED_BY(mu_) = 1;
  uint64_t next_token_ HCPRP_GUARDED_BY(mu_) = 1;
  std::mt19937_64 rng_ HCPRP_GUARDED_BY(mu_);
  std::set<std::string> dirty_resources_ HCPRP_GUARDED_BY(mu_);  // lower-cased IDs changed since TakeChanges
  bool dirty_meta_ HCPRP_GUARDED_BY(mu_) = false;                // next_token_ or deleted_identities_
};

}  // namespace hcprp::provisioning
