// The simulated Azure's operations: creates, deletes and polls as long-running operations, the
// customer's side, faults and the views. The resource-type table is in azure_types.cpp, persistence in
// azure_state.cpp.
#include "provisioning/azure.h"

#include <algorithm>
#include <cmath>

#include "core/time.h"
#include "core/uuid.h"
#include "provisioning/azure_internal.h"
#include "provisioning/crash_point.h"

namespace hcprp::provisioning {

namespace {

using azure_internal::Info;
using azure_internal::TypeInfo;

// "/subscriptions/s/resourceGroups/rg" of any ID below it (lower-cased), or "" when none.
std::string ResourceGroupOf(const std::string& lower_id) {
  const std::string_view marker = "/resourcegroups/";
  size_t p = lower_id.find(marker);
  if (p == std::string::npos) return "";
  size_t end = lower_id.find('/', p + marker.size());
  return end == std::string::npos ? lower_id : lower_id.substr(0, end);
}

std::string_view NameOf(std::string_view id) {
  size_t p = id.rfind('/');
  return p == std::string_view::npos ? id : id.substr(p + 1);
}

constexpr std::string_view kTenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
constexpr std::string_view kIdentityNamespace = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";
// Principal (object) IDs of identities: another namespace, so that they differ from the client IDs.
constexpr std::string_view kPrincipalNamespace = "6ba7b812-9dad-11d1-80b4-00c04fd430c8";

// A call that ended Failed with `http_status` (for a refused call, the refusal's; for a poll, 200: the
// operation status answers while the operation itself failed).
AzureCall FailedCall(int http_status, std::string code, std::string message) {
  AzureCall c;
  c.outcome = AzureCall::Outcome::kFailed;
  c.http_status = http_status;
  c.code = std::move(code);
  c.message = std::move(message);
  return c;
}

}  // namespace

SimulatedAzure::SimulatedAzure(const AzureOptions& options)
    : options_(options), rng_(options.seed ? options.seed : std::random_device{}()) {}

SimulatedAzure::~SimulatedAzure() = default;

Result<std::unique_ptr<SimulatedAzure>> SimulatedAzure::Open(const AzureOptions& options) {
  if (!options.clock) return Error::InvalidArgument("AzureOptions.clock is required");
  std::unique_ptr<SimulatedAzure> az(new SimulatedAzure(options));
  HCPRP_RETURN_IF_ERROR(az->Load());
  return az;
}

Duration SimulatedAzure::Scaled(Duration d) const {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(d.count()) *
                                              options_.time_scale);
}

Duration SimulatedAzure::SampleLocked(ResourceType type, bool is_delete) {
  const TypeInfo& i = Info(type);
  const double median = is_delete ? i.delete_median : i.create_median;
  const double p99 = is_delete ? i.delete_p99 : i.create_p99;
  double seconds = 0;
  switch (options_.profile) {
    case LatencyProfile::kInstant:
      seconds = 0;
      break;
    case LatencyProfile::kDemo:
      seconds = median / 30.0;
      break;
    case LatencyProfile::kRealistic: {
      const double sigma = std::log(p99 / median) / 2.326;  // z of the 99th percentile
      std::lognormal_distribution<double> dist(std::log(median), sigma);
      seconds = std::min(dist(rng_), p99 * 2);
      break;
    }
  }
  return Scaled(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
}

void SimulatedAzure::SettleLocked(TimePoint now) {
  while (!due_.empty() && due_.begin()->first <= now) {
    std::string token = due_.begin()->second;
    due_.erase(due_.begin());
    auto oit = operations_.find(token);
    if (oit == operations_.end() || oit->second.settled) continue;
    Operation& op = oit->second;
    op.settled = true;
    TouchLocked(op.key);
    auto rit = resources_.find(op.key);
    if (rit == resources_.end() || rit->second.active_op != token) continue;  // superseded
    Resource& r = rit->second;
    r.active_op.clear();
    if (!op.is_delete) {
      r.state = op.failed ? "Failed" : "Succeeded";
      continue;
    }
    if (op.failed) {
      r.state = "Failed";
      continue;
    }
    if (r.type == ResourceType::kResourceGroup) {
      // Everything in the group goes with it, whatever it was doing.
      const std::string prefix = op.key + "/";
      for (auto it = resources_.lower_bound(prefix);
           it != resources_.end() && it->first.rfind(prefix, 0) == 0;) {
        TouchLocked(it->first);
        it = resources_.erase(it);
      }
    }
    resources_.erase(rit);
  }
}

std::optional<AzureCall> SimulatedAzure::CheckCallerLocked(std::string_view caller,
                                                           std::optional<ResourceType> type,
                                                           std::string_view verb,
                                                           const std::string& scope) const {
  if (caller == kFirstParty) return std::nullopt;
  const std::string key = ToLower(caller);
  auto it = resources_.find(key);
  const bool missing = it == resources_.end() || it->second.type != ResourceType::kManagedIdentity;
  if (!missing && it->second.permissions) return std::nullopt;
  const std::string client_id = UuidV5(kIdentityNamespace, key);
  const std::string action = type ? std::string(ArmType(*type)) + "/" + std::string(verb) : std::string(verb);
  if (missing) {
    return FailedCall(
        401, "AADSTS700016",
        "AADSTS700016: Application with identifier '" + client_id + "' was not found in the directory '" +
            std::string(kTenant) +
            "'. This can happen if the application has not been installed by the administrator of the tenant "
            "or consented to by any user in the tenant.");
  }
  return FailedCall(403, "AuthorizationFailed",
                    "The client '" + client_id + "' with object id '" + client_id +
                        "' does not have authorization to perform action '" + action + "' over scope '" +
                        scope + "' or the scope is invalid.");
}

std::optional<AzureFault> SimulatedAzure::DrawFaultLocked(ResourceType type, std::string_view op,
                                                          std::string_view kind) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    AzureFault& f = *it;
    if (f.type && *f.type != type) continue;
    if (f.operation != op || f.kind != kind || f.remaining == 0) continue;
    if (f.fraction < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= f.fraction) continue;
    AzureFault hit = f;
    if (f.remaining > 0 && --f.remaining == 0) faults_.erase(it);
    return hit;
  }
  return std::nullopt;
}

AzureCall SimulatedAzure::PendingLocked(const Operation& op, TimePoint now) const {
  AzureCall c;
  c.outcome = AzureCall::Outcome::kPending;
  c.http_status = 202;
  c.token = op.token;
  c.done_at = op.done_at;
  const Duration left = op.done_at > now ? op.done_at - now : Duration::zero();
  c.retry_after = std::min(left, Scaled(options_.poll_interval));
  return c;
}

AzureCall SimulatedAzure::ThrottledCall(const AzureFault& f) const {
  AzureCall c;
  c.outcome = AzureCall::Outcome::kThrottled;
  c.http_status = 429;
  c.code = "TooManyRequests";
  c.message = f.message.empty() ? "Too many requests" : f.message;
  c.retry_after = Scaled(f.retry_after);
  return c;
}

AzureCall SimulatedAzure::StartLocked(ResourceType type, const std::string& key, Resource& r, bool is_delete,
                                      TimePoint now, bool& poll_now) {
  Operation op;
  op.token = "op-" + std::to_string(next_token_++);
  op.key = key;
  op.type = type;
  op.is_delete = is_delete;
  op.started = now;
  const Duration d = SampleLocked(type, is_delete);
  op.done_at = now + d;
  if (auto f = DrawFaultLocked(type, is_delete ? "delete" : "create", "fail")) {
    op.failed = true;
    op.code = f->code;
    op.message = f->message;
  }
  r.state = is_delete ? "Deleting" : "Creating";
  r.active_op = op.token;
  if (!is_delete) {
    create_starts_[key]++;
    create_duration_ms_[key] = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }
  due_.emplace(op.done_at, op.token);
  if (CrashPointsArmed())
    CrashPoint(std::string("azure.") + (is_delete ? "delete." : "create.") + std::string(ShortName(type)));
  TouchLocked(key);
  dirty_meta_ = true;
  AzureCall c = PendingLocked(op, now);
  operations_.emplace(op.token, std::move(op));
  poll_now = d == Duration::zero();
  return c;
}

AzureCall SimulatedAzure::BeginCreate(std::string_view caller, ResourceType type, const std::string& id) {
  return Begin(caller, kCreateCall, type, id);
}

AzureCall SimulatedAzure::BeginDelete(std::string_view caller, const std::string& id) {
  return Begin(caller, kDeleteCall, ResourceType::kResourceGroup, id);
}

AzureCall SimulatedAzure::Begin(std::string_view caller, Call call, ResourceType type,
                                const std::string& id) {
  bool poll_now = false;
  AzureCall c;
  {
    MutexLock lock(mu_);
    c = call == kCreateCall ? BeginCreateLocked(caller, type, id, poll_now)
                            : BeginDeleteLocked(caller, id, type, poll_now);
  }
  if (poll_now) {
    // Settles at once; the poll is part of this call, not counted as one of its own.
    ResourceType polled = type;
    c = PollUncounted(caller, c.token, polled);
  }
  Count(type, call, c);
  return c;
}

AzureCall SimulatedAzure::BeginCreateLocked(std::string_view caller, ResourceType type, const std::string& id,
                                            bool& poll_now) {
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = ToLower(id);
  if (auto denied = CheckCallerLocked(caller, type, "write", id)) return *denied;
  if (auto f = DrawFaultLocked(type, "create", "throttle")) return ThrottledCall(*f);
  if (type != ResourceType::kResourceGroup) {
    auto rg = resources_.find(ResourceGroupOf(key));
    if (rg == resources_.end() || rg->second.state == "Deleting") {
      return FailedCall(
          404, "ResourceGroupNotFound",
          "Resource group '" + std::string(NameOf(ResourceGroupOf(key))) + "' could not be found.");
    }
  }
  auto it = resources_.find(key);
  if (it != resources_.end()) {
    Resource& r = it->second;
    if (r.state == "Succeeded") return AzureCall{};
    if (r.state == "Creating") return PendingLocked(operations_.at(r.active_op), now);
    if (r.state == "Deleting")
      return FailedCall(409, "Conflict", "The resource '" + id + "' is being deleted.");
  }
  Resource& r = resources_[key];
  if (r.id.empty()) {
    r.id = id;
    r.type = type;
    r.created = now;
  }
  return StartLocked(type, key, r, false, now, poll_now);
}

AzureCall SimulatedAzure::BeginDeleteLocked(std::string_view caller, const std::string& id,
                                            ResourceType& type, bool& poll_now) {
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = ToLower(id);
  auto it = resources_.find(key);
  type = it != resources_.end() ? it->second.type : ResourceType::kResourceGroup;
  if (auto denied = CheckCallerLocked(caller, type, "delete", id)) return *denied;
  if (it == resources_.end()) return AzureCall{.http_status = 204};
  if (auto f = DrawFaultLocked(type, "delete", "throttle")) return ThrottledCall(*f);
  Resource& r = it->second;
  if (r.state == "Deleting") return PendingLocked(operations_.at(r.active_op), now);
  return StartLocked(type, key, r, true, now, poll_now);
}

AzureCall SimulatedAzure::Poll(std::string_view caller, const std::string& token) {
  ResourceType type = ResourceType::kResourceGroup;
  AzureCall c = PollUncounted(caller, token, type);
  Count(type, kPollCall, c);
  return c;
}

AzureCall SimulatedAzure::PollUncounted(std::string_view caller, const std::string& token,
                                        ResourceType& type) {
  MutexLock lock(mu_);
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  auto it = operations_.find(token);
  if (it != operations_.end()) type = it->second.type;
  if (it == operations_.end())
    return FailedCall(404, "OperationNotFound", "The operation '" + token + "' was not found.");
  const Operation& op = it->second;
  if (auto denied = CheckCallerLocked(caller, std::nullopt, "Microsoft.Resources/operations/read", op.key))
    return *denied;
  if (!op.settled) return PendingLocked(op, now);
  AzureCall c = op.failed ? FailedCall(200, op.code, op.message) : AzureCall{};
  c.token = token;
  // A terminal answer is read once; a later poll of the same token finds nothing and the caller reads
  // the resource instead.
  operations_.erase(it);
  return c;
}

void SimulatedAzure::Count(ResourceType type, Call call, const AzureCall& c) {
  size_t outcome = 0;
  switch (c.outcome) {
    case AzureCall::Outcome::kDone:
      outcome = 0;
      break;
    case AzureCall::Outcome::kPending:
      outcome = 1;
      break;
    case AzureCall::Outcome::kFailed:
      outcome = c.credential_error() ? 3 : 2;
      break;
    case AzureCall::Outcome::kThrottled:
      outcome = 4;
      break;
  }
  calls_[static_cast<size_t>(type)][call][outcome].fetch_add(1, std::memory_order_relaxed);
}

std::vector<SimulatedAzure::CallCount> SimulatedAzure::CallCounts() const {
  static constexpr std::string_view kCallNames[kCalls] = {"create", "delete", "poll"};
  static constexpr std::string_view kOutcomeNames[kOutcomes] = {"succeeded", "accepted", "failed",
                                                                "unauthorized", "throttled"};
  std::vector<CallCount> out;
  for (size_t t = 0; t < calls_.size(); ++t) {
    for (size_t c = 0; c < kCalls; ++c) {
      for (size_t o = 0; o < kOutcomes; ++o) {
        int64_t n = calls_[t][c][o].load(std::memory_order_relaxed);
        if (n > 0) out.push_back({static_cast<ResourceType>(t), kCallNames[c], kOutcomeNames[o], n});
      }
    }
  }
  return out;
}

std::optional<std::string> SimulatedAzure::ProvisioningState(const std::string& id) {
  MutexLock lock(mu_);
  SettleLocked(options_.clock->Now());
  auto it = resources_.find(ToLower(id));
  if (it == resources_.end()) return std::nullopt;
  return it->second.state;
}

std::optional<std::string> SimulatedAzure::ActiveOperation(const std::string& id) {
  MutexLock lock(mu_);
  SettleLocked(options_.clock->Now());
  auto it = resources_.find(ToLower(id));
  if (it == resources_.end() || it->second.active_op.empty()) return std::nullopt;
  return it->second.active_op;
}

std::optional<json::object> SimulatedAzure::IdentityIds(const std::string& id) const {
  MutexLock lock(mu_);
  const std::string key = ToLower(id);
  auto it = resources_.find(key);
  if (it == resources_.end() || it->second.type != ResourceType::kManagedIdentity) return std::nullopt;
  return json::object{{"client_id", UuidV5(kIdentityNamespace, key)},
                      {"principal_id", UuidV5(kPrincipalNamespace, key)}};
}

void SimulatedAzure::EnsureCustomerResource(ResourceType type, const std::string& id) {
  MutexLock lock(mu_);
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = ToLower(id);
  if (type == ResourceType::kManagedIdentity && deleted_identities_.count(key)) return;
  const std::string rg = ResourceGroupOf(key);
  if (!rg.empty() && rg != key && !resources_.count(rg)) {
    AddCustomerLocked(rg, id.substr(0, rg.size()), ResourceType::kResourceGroup, now);
  }
  if (!resources_.count(key)) AddCustomerLocked(key, id, type, now);
}

void SimulatedAzure::AddCustomerLocked(const std::string& key, std::string id, ResourceType type,
                                       TimePoint now) {
  resources_.emplace(
      key,
      Resource{.id = std::move(id), .type = type, .state = "Succeeded", .created = now, .customer = true});
  TouchLocked(key);
}

Status SimulatedAzure::DeleteIdentity(const std::string& id) {
  MutexLock lock(mu_);
  const std::string key = ToLower(id);
  auto it = resources_.find(key);
  if (it == resources_.end() || it->second.type != ResourceType::kManagedIdentity) {
    return Error::NotFound("managed identity '" + id + "' not found");
  }
  resources_.erase(it);
  deleted_identities_[key] = true;
  TouchLocked(key);
  dirty_meta_ = true;
  if (options_.logger) options_.logger->Info("managed identity deleted", {{"id", id}});
  return Status::Ok();
}

Status SimulatedAzure::SetIdentityPermissions(const std::string& id, bool granted) {
  MutexLock lock(mu_);
  auto it = resources_.find(ToLower(id));
  if (it == resources_.end() || it->second.type != ResourceType::kManagedIdentity) {
    return Error::NotFound("managed identity '" + id + "' not found");
  }
  it->second.permissions = granted;
  TouchLocked(it->first);
  return Status::Ok();
}

int64_t SimulatedAzure::AddFault(AzureFault fault) {
  MutexLock lock(mu_);
  fault.id = next_fault_id_++;
  faults_.push_back(fault);
  return fault.id;
}

void SimulatedAzure::ClearFaults() {
  MutexLock lock(mu_);
  faults_.clear();
}

json::array SimulatedAzure::Faults() const {
  MutexLock lock(mu_);
  json::array out;
  for (const auto& f : faults_) {
    out.push_back(json::object{{"id", f.id},
                               {"resource_type", f.type ? ShortName(*f.type) : "*"},
                               {"operation", f.operation},
                               {"kind", f.kind},
                               {"remaining", f.remaining},
                               {"fraction", f.fraction},
                               {"code", f.code},
                               {"message", f.message}});
  }
  return out;
}

json::array SimulatedAzure::List(std::string_view prefix) const {
  MutexLock lock(mu_);
  const_cast<SimulatedAzure*>(this)->SettleLocked(options_.clock->Now());
  const std::string p = ToLower(prefix);
  json::array out;
  for (auto it = resources_.lower_bound(p); it != resources_.end() && it->first.rfind(p, 0) == 0; ++it) {
    const Resource& r = it->second;
    auto cs = create_starts_.find(it->first);
    out.push_back(json::object{{"id", r.id},
                               {"type", ArmType(r.type)},
                               {"provisioningState", r.state},
                               {"createdTime", FormatRfc3339(r.created)},
                               {"customerOwned", r.customer},
                               {"createAttempts", cs == create_starts_.end() ? 0 : cs->second}});
  }
  return out;
}

size_t SimulatedAzure::resource_count() const {
  MutexLock lock(mu_);
  const_cast<SimulatedAzure*>(this)->SettleLocked(options_.clock->Now());
  return resources_.size();
}

size_t SimulatedAzure::operations_in_flight() const {
  MutexLock lock(mu_);
  const_cast<SimulatedAzure*>(this)->SettleLocked(options_.clock->Now());
  return due_.size();
}

int64_t SimulatedAzure::CreateStarts(const std::string& id) const {
  MutexLock lock(mu_);
  auto it = create_starts_.find(ToLower(id));
  return it == create_starts_.end() ? 0 : it->second;
}

int64_t SimulatedAzure::MaxCreateStarts() const {
  MutexLock lock(mu_);
  int64_t m = 0;
  for (const auto& [k, v] : create_starts_) m = std::max(m, v);
  return m;
}

std::map<std::string, int64_t> SimulatedAzure::CreateDurationsMs() const {
  MutexLock lock(mu_);
  return std::map<std::string, int64_t>(create_duration_ms_.begin(), create_duration_ms_.end());
}

}  // namespace hcprp::provisioning
