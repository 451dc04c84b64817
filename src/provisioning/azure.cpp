#include "provisioning/azure.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_writer.h"
#include "core/time.h"
#include "core/uuid.h"
#include "provisioning/crash_point.h"
#include "provisioning/snapshot.h"

namespace hcprp::provisioning {

namespace {

struct TypeInfo {
  ResourceType type;
  std::string_view arm;
  std::string_view condition;
  std::string_view short_name;
  // Realistic latencies in seconds: create median, create p99, delete median, delete p99.
  double create_median, create_p99, delete_median, delete_p99;
};

constexpr TypeInfo kTypes[kResourceTypeCount] = {
    {ResourceType::kResourceGroup, "Microsoft.Resources/resourceGroups", "ResourceGroup", "resourceGroup", 3,
     10, 90, 300},
    {ResourceType::kVirtualNetwork, "Microsoft.Network/virtualNetworks", "VNet", "virtualNetwork", 5, 15, 5,
     15},
    {ResourceType::kSubnet, "Microsoft.Network/virtualNetworks/subnets", "Subnet", "subnet", 4, 12, 4, 12},
    {ResourceType::kNetworkSecurityGroup, "Microsoft.Network/networkSecurityGroups", "SecurityGroups",
     "networkSecurityGroup", 4, 12, 4, 12},
    {ResourceType::kManagedIdentity, "Microsoft.ManagedIdentity/userAssignedIdentities", "Identity",
     "managedIdentity", 2, 6, 2, 6},
    {ResourceType::kLoadBalancer, "Microsoft.Network/loadBalancers", "LoadBalancers", "loadBalancer", 15, 45,
     12, 40},
    {ResourceType::kPublicIp, "Microsoft.Network/publicIPAddresses", "PublicIPs", "publicIP", 4, 15, 5, 20},
    {ResourceType::kNetworkInterface, "Microsoft.Network/networkInterfaces", "NetworkInterfaces",
     "networkInterface", 3, 10, 4, 15},
    {ResourceType::kDisk, "Microsoft.Compute/disks", "Disks", "disk", 6, 20, 5, 20},
    {ResourceType::kVirtualMachine, "Microsoft.Compute/virtualMachines", "VM", "virtualMachine", 110, 300, 80,
     240},
    {ResourceType::kRoleAssignment, "Microsoft.Authorization/roleAssignments", "RoleAssignment",
     "roleAssignment", 2, 6, 2, 6},
    {ResourceType::kVmExtension, "Microsoft.Compute/virtualMachines/extensions", "VMExtension", "vmExtension",
     60, 180, 20, 60},
};

const TypeInfo& Info(ResourceType t) { return kTypes[static_cast<int>(t)]; }

std::string Lower(std::string_view s) { return ToLower(s); }

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

}  // namespace

std::string_view ArmType(ResourceType t) { return Info(t).arm; }
std::string_view ConditionPrefix(ResourceType t) { return Info(t).condition; }
std::string_view ShortName(ResourceType t) { return Info(t).short_name; }

Result<ResourceType> ParseShortName(std::string_view name) {
  for (const auto& i : kTypes) {
    if (EqualsIgnoreCase(i.short_name, name) || EqualsIgnoreCase(i.arm, name)) return i.type;
  }
  return Error::InvalidArgument("unknown resource type '" + std::string(name) + "'");
}

Result<LatencyProfile> ParseLatencyProfile(std::string_view name) {
  if (name == "instant") return LatencyProfile::kInstant;
  if (name == "demo") return LatencyProfile::kDemo;
  if (name == "realistic") return LatencyProfile::kRealistic;
  return Error::InvalidArgument("unknown latency profile '" + std::string(name) + "'");
}

struct SimulatedAzure::Resource {
  std::string id;  // as first given
  ResourceType type = ResourceType::kResourceGroup;
  std::string state;  // Creating, Succeeded, Failed, Deleting
  TimePoint created{};
  std::string active_op;
  bool customer = false;
  bool permissions = true;  // identities
};

struct SimulatedAzure::Operation {
  std::string token;
  std::string key;  // lower-cased resource ID
  ResourceType type = ResourceType::kResourceGroup;
  bool is_delete = false;
  TimePoint started{}, done_at{};
  bool settled = false;
  bool failed = false;
  std::string code, message;
};

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
  const std::string key = Lower(caller);
  auto it = resources_.find(key);
  const bool missing = it == resources_.end() || it->second.type != ResourceType::kManagedIdentity;
  if (!missing && it->second.permissions) return std::nullopt;
  const std::string client_id = UuidV5(kIdentityNamespace, key);
  const std::string action = type ? std::string(ArmType(*type)) + "/" + std::string(verb) : std::string(verb);
  if (missing) {
    AzureCall c;
    c.outcome = AzureCall::Outcome::kFailed;
    c.http_status = 401;
    c.code = "AADSTS700016";
    c.message =
        "AADSTS700016: Application with identifier '" + client_id + "' was not found in the directory '" +
        std::string(kTenant) +
        "'. This can happen if the application has not been installed by the administrator of the tenant "
        "or consented to by any user in the tenant.";
    return c;
  }
  if (!it->second.permissions) {
    AzureCall c;
    c.outcome = AzureCall::Outcome::kFailed;
    c.http_status = 403;
    c.code = "AuthorizationFailed";
    c.message = "The client '" + client_id + "' with object id '" + client_id +
                "' does not have authorization to perform action '" + std::string(action) + "' over scope '" +
                scope + "' or the scope is invalid.";
    return c;
  }
  return std::nullopt;
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

AzureCall SimulatedAzure::PollIfDue(std::string_view caller, AzureCall c, ResourceType type, bool poll_now) {
  if (!poll_now) return c;
  return PollUncounted(caller, c.token, type);  // settles at once
}

AzureCall SimulatedAzure::BeginCreate(std::string_view caller, ResourceType type, const std::string& id) {
  AzureCall c = BeginCreateUncounted(caller, type, id);
  Count(type, 0, c);
  return c;
}

AzureCall SimulatedAzure::BeginCreateUncounted(std::string_view caller, ResourceType type,
                                               const std::string& id) {
  bool poll_now = false;
  AzureCall c;
  {
    MutexLock lock(mu_);
    c = BeginCreateLocked(caller, type, id, poll_now);
  }
  return PollIfDue(caller, std::move(c), type, poll_now);
}

AzureCall SimulatedAzure::BeginCreateLocked(std::string_view caller, ResourceType type, const std::string& id,
                                            bool& poll_now) {
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = Lower(id);
  if (auto denied = CheckCallerLocked(caller, type, "write", id)) return *denied;
  if (auto f = DrawFaultLocked(type, "create", "throttle")) return ThrottledCall(*f);
  if (type != ResourceType::kResourceGroup) {
    auto rg = resources_.find(ResourceGroupOf(key));
    if (rg == resources_.end() || rg->second.state == "Deleting") {
      AzureCall c;
      c.outcome = AzureCall::Outcome::kFailed;
      c.http_status = 404;
      c.code = "ResourceGroupNotFound";
      c.message = "Resource group '" + std::string(NameOf(ResourceGroupOf(key))) + "' could not be found.";
      return c;
    }
  }
  auto it = resources_.find(key);
  if (it != resources_.end()) {
    Resource& r = it->second;
    if (r.state == "Succeeded") return AzureCall{};
    if (r.state == "Creating") return PendingLocked(operations_.at(r.active_op), now);
    if (r.state == "Deleting") {
      AzureCall c;
      c.outcome = AzureCall::Outcome::kFailed;
      c.http_status = 409;
      c.code = "Conflict";
      c.message = "The resource '" + id + "' is being deleted.";
      return c;
    }
  }
  Resource& r = resources_[key];
  if (r.id.empty()) {
    r.id = id;
    r.type = type;
    r.created = now;
  }
  return StartLocked(type, key, r, false, now, poll_now);
}

AzureCall SimulatedAzure::BeginDelete(std::string_view caller, const std::string& id) {
  ResourceType type = ResourceType::kResourceGroup;
  AzureCall c = BeginDeleteUncounted(caller, id, type);
  Count(type, 1, c);
  return c;
}

AzureCall SimulatedAzure::BeginDeleteUncounted(std::string_view caller, const std::string& id,
                                               ResourceType& type) {
  bool poll_now = false;
  AzureCall c;
  {
    MutexLock lock(mu_);
    c = BeginDeleteLocked(caller, id, type, poll_now);
  }
  return PollIfDue(caller, std::move(c), type, poll_now);
}

AzureCall SimulatedAzure::BeginDeleteLocked(std::string_view caller, const std::string& id,
                                            ResourceType& type, bool& poll_now) {
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = Lower(id);
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
  Count(type, 2, c);
  return c;
}

AzureCall SimulatedAzure::PollUncounted(std::string_view caller, const std::string& token,
                                        ResourceType& type) {
  MutexLock lock(mu_);
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  auto it = operations_.find(token);
  if (it != operations_.end()) type = it->second.type;
  if (it == operations_.end()) {
    AzureCall c;
    c.outcome = AzureCall::Outcome::kFailed;
    c.http_status = 404;
    c.code = "OperationNotFound";
    c.message = "The operation '" + token + "' was not found.";
    return c;
  }
  const Operation& op = it->second;
  if (auto denied = CheckCallerLocked(caller, std::nullopt, "Microsoft.Resources/operations/read", op.key))
    return *denied;
  if (!op.settled) return PendingLocked(op, now);
  AzureCall c;
  c.token = token;
  if (op.failed) {
    c.outcome = AzureCall::Outcome::kFailed;
    c.http_status = 200;  // the operation status answers; the operation itself failed
    c.code = op.code;
    c.message = op.message;
  }
  // A terminal answer is read once; a later poll of the same token finds nothing and the caller reads
  // the resource instead.
  operations_.erase(it);
  return c;
}

void SimulatedAzure::Count(ResourceType type, size_t call, const AzureCall& c) {
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
  auto it = resources_.find(Lower(id));
  if (it == resources_.end()) return std::nullopt;
  return it->second.state;
}

std::optional<std::string> SimulatedAzure::ActiveOperation(const std::string& id) {
  MutexLock lock(mu_);
  SettleLocked(options_.clock->Now());
  auto it = resources_.find(Lower(id));
  if (it == resources_.end() || it->second.active_op.empty()) return std::nullopt;
  return it->second.active_op;
}

void SimulatedAzure::EnsureCustomerResource(ResourceType type, const std::string& id) {
  MutexLock lock(mu_);
  const TimePoint now = options_.clock->Now();
  SettleLocked(now);
  const std::string key = Lower(id);
  if (type == ResourceType::kManagedIdentity && deleted_identities_.count(key)) return;
  const std::string rg = ResourceGroupOf(key);
  if (!rg.empty() && rg != key && !resources_.count(rg)) {
    Resource g;
    g.id = id.substr(0, rg.size());
    g.type = ResourceType::kResourceGroup;
    g.state = "Succeeded";
    g.created = now;
    g.customer = true;
    resources_.emplace(rg, std::move(g));
    TouchLocked(rg);
  }
  if (resources_.count(key)) return;
  Resource r;
  r.id = id;
  r.type = type;
  r.state = "Succeeded";
  r.created = now;
  r.customer = true;
  resources_.emplace(key, std::move(r));
  TouchLocked(key);
}

Status SimulatedAzure::DeleteIdentity(const std::string& id) {
  MutexLock lock(mu_);
  const std::string key = Lower(id);
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
  auto it = resources_.find(Lower(id));
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
  const std::string p = Lower(prefix);
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
  auto it = create_starts_.find(Lower(id));
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

namespace {

constexpr std::string_view kResourceSpace = "azure.resource";
constexpr std::string_view kMetaSpace = "azure.meta";

}  // namespace

struct AzureChanges::Data {
  struct Entry {
    std::string key;
    int64_t create_starts = 0;
    std::optional<int64_t> create_ms;
    std::optional<SimulatedAzure::Resource> resource;  // nullopt: gone
    std::optional<SimulatedAzure::Operation> op;       // its operation in progress
  };
  std::vector<Entry> entries;
  std::optional<std::vector<std::string>> deleted_identities;  // set: the metadata changed
  int64_t next_token = 0;
};

AzureChanges::AzureChanges() = default;
AzureChanges::~AzureChanges() = default;
AzureChanges::AzureChanges(AzureChanges&&) noexcept = default;
AzureChanges& AzureChanges::operator=(AzureChanges&&) noexcept = default;

void AzureChanges::EncodeInto(simulator::StateBatch& batch) const {
  if (!data_) return;
  for (const auto& e : data_->entries) {
    if (!e.resource && e.create_starts == 0) {
      batch.Delete(std::string(kResourceSpace), e.key);
      continue;
    }
    // The create count outlives the resource: it is how duplicates are told.
    std::string doc;
    doc.reserve(512);
    JsonWriter w(doc);
    w.BeginObject().Member("create_starts", e.create_starts);
    if (e.create_ms) w.Member("create_ms", *e.create_ms);
    if (e.resource) {
      // Its operation in progress goes with it; an operation already ended and not yet polled is not
      // kept (a poll after a restart finds nothing and the caller reads the resource instead).
      if (e.op) {
        const SimulatedAzure::Operation& o = *e.op;
        w.Key("op")
            .BeginObject()
            .Member("token", o.token)
            .Member("key", o.key)
            .Member("started_ms", ToUnixMillis(o.started))
            .Member("done_ms", ToUnixMillis(o.done_at));
        // What loading defaults (false, empty) is left out: these documents are written at every step.
        if (o.is_delete) w.Member("delete", true);
        if (o.settled) w.Member("settled", true);
        if (o.failed) w.Member("failed", true);
        if (!o.code.empty()) w.Member("code", o.code);
        if (!o.message.empty()) w.Member("message", o.message);
        w.EndObject();
      }
      const SimulatedAzure::Resource& r = *e.resource;
      w.Key("resource")
          .BeginObject()
          .Member("id", r.id)
          .Member("type", static_cast<int>(r.type))
          .Member("state", r.state)
          .Member("created_ms", ToUnixMillis(r.created))
          .Member("active_op", r.active_op);
      if (r.customer) w.Member("customer", true);
      if (!r.permissions) w.Member("permissions", false);
      w.EndObject();
    }
    w.EndObject();
    batch.Put(std::string(kResourceSpace), e.key, std::move(doc));
  }
  if (data_->deleted_identities) {
    json::array tomb;
    for (const auto& k : *data_->deleted_identities) tomb.push_back(json::value(k));
    batch.Put(
        std::string(kMetaSpace), "meta",
        ToJson(json::object{{"next_token", data_->next_token}, {"deleted_identities", std::move(tomb)}}));
  }
}

AzureChanges SimulatedAzure::TakeChanges() {
  AzureChanges out;
  if (!options_.state) return out;
  out.data_ = std::make_unique<AzureChanges::Data>();
  AzureChanges::Data& d = *out.data_;
  MutexLock lock(mu_);
  d.entries.reserve(dirty_resources_.size());
  for (const auto& key : dirty_resources_) {
    AzureChanges::Data::Entry& e = d.entries.emplace_back();
    e.key = key;
    if (auto cs = create_starts_.find(key); cs != create_starts_.end()) e.create_starts = cs->second;
    if (auto c = create_duration_ms_.find(key); c != create_duration_ms_.end()) e.create_ms = c->second;
    if (auto r = resources_.find(key); r != resources_.end()) {
      e.resource = r->second;
      if (auto op = operations_.find(r->second.active_op); op != operations_.end()) e.op = op->second;
    }
  }
  if (dirty_meta_) {
    d.next_token = next_token_;
    d.deleted_identities.emplace();
    for (const auto& [k, v] : deleted_identities_) d.deleted_identities->push_back(k);
  }
  dirty_resources_.clear();
  dirty_meta_ = false;
  return out;
}

Status SimulatedAzure::Flush() {
  if (!options_.state) return Status::Ok();
  simulator::StateBatch batch;
  TakeChanges().EncodeInto(batch);
  return options_.state->Commit(batch);
}

Status SimulatedAzure::Load() {
  if (!options_.state) return Status::Ok();
  HCPRP_ASSIGN_OR_RETURN(auto resources, options_.state->Load(kResourceSpace));
  HCPRP_ASSIGN_OR_RETURN(auto meta, options_.state->Load(kMetaSpace));
  const std::string legacy = options_.state->dir() + "/azure.json";
  if (resources.empty() && meta.empty()) {
    // Written by an older version as a periodic snapshot: imported once, then only the database.
    HCPRP_ASSIGN_OR_RETURN(auto text, ReadFileIfExists(legacy));
    if (!text.has_value()) return Status::Ok();
    auto parsed = ParseJson(*text, 16);
    if (!parsed.ok() || !parsed->is_object()) return Error::Corruption(legacy + " is not a JSON object");
    {
      MutexLock lock(mu_);
      HCPRP_RETURN_IF_ERROR(LoadLegacyJson(parsed->as_object()));
      for (const auto& [k, r] : resources_) dirty_resources_.insert(k);
      for (const auto& [k, v] : create_starts_) dirty_resources_.insert(k);
      dirty_meta_ = true;
    }
    HCPRP_RETURN_IF_ERROR(Flush());
    std::error_code ec;
    std::filesystem::remove(legacy, ec);
    return Status::Ok();
  }
  MutexLock lock(mu_);
  json::array res, ops;
  json::object starts;
  for (const auto& [key, text] : resources) {
    auto v = ParseJson(text, 16);
    if (!v.ok() || !v->is_object())
      return Error::Corruption("azure resource " + key + " is not a JSON object");
    const json::object& d = v->as_object();
    if (auto n = GetInt(d, "create_starts"); n && *n > 0) starts[key] = *n;
    if (auto ms = GetInt(d, "create_ms")) create_duration_ms_[key] = *ms;
    if (const json::object* r = GetObject(d, "resource")) res.push_back(*r);
    if (const json::object* o = GetObject(d, "op")) ops.push_back(*o);
  }
  json::object root{{"resources", std::move(res)}, {"operations", std::move(ops)}, {"create_starts", starts}};
  for (const auto& [key, text] : meta) {
    auto v = ParseJson(text, 16);
    if (!v.ok() || !v->is_object()) return Error::Corruption("azure meta is not a JSON object");
    for (const auto& [k, x] : v->as_object()) root[k] = x;
  }
  return LoadLegacyJson(root);
}

Status SimulatedAzure::LoadLegacyJson(const json::object& root) {
  if (const json::array* res = GetArray(root, "resources")) {
    for (const auto& v : *res) {
      if (!v.is_object()) continue;
      const json::object& o = v.as_object();
      Resource r;
      r.id = std::string(GetString(o, "id").value_or(""));
      r.type = static_cast<ResourceType>(GetInt(o, "type").value_or(0));
      r.state = std::string(GetString(o, "state").value_or(""));
      r.created = FromUnixMillis(GetInt(o, "created_ms").value_or(0));
      r.active_op = std::string(GetString(o, "active_op").value_or(""));
      r.customer = GetBool(o, "customer").value_or(false);
      r.permissions = GetBool(o, "permissions").value_or(true);
      resources_.emplace(Lower(r.id), std::move(r));
    }
  }
  if (const json::array* ops = GetArray(root, "operations")) {
    for (const auto& v : *ops) {
      if (!v.is_object()) continue;
      const json::object& o = v.as_object();
      Operation op;
      op.token = std::string(GetString(o, "token").value_or(""));
      op.key = std::string(GetString(o, "key").value_or(""));
      if (auto r = resources_.find(op.key); r != resources_.end()) op.type = r->second.type;
      op.is_delete = GetBool(o, "delete").value_or(false);
      op.started = FromUnixMillis(GetInt(o, "started_ms").value_or(0));
      op.done_at = FromUnixMillis(GetInt(o, "done_ms").value_or(0));
      op.settled = GetBool(o, "settled").value_or(false);
      op.failed = GetBool(o, "failed").value_or(false);
      op.code = std::string(GetString(o, "code").value_or(""));
      op.message = std::string(GetString(o, "message").value_or(""));
      if (!op.settled) due_.emplace(op.done_at, op.token);
      operations_.emplace(op.token, std::move(op));
    }
  }
  if (const json::object* starts = GetObject(root, "create_starts")) {
    for (const auto& [k, v] : *starts) {
      if (v.is_int64()) create_starts_[std::string(k)] = v.as_int64();
    }
  }
  if (const json::array* tomb = GetArray(root, "deleted_identities")) {
    for (const auto& v : *tomb) {
      if (v.is_string()) deleted_identities_[std::string(v.as_string())] = true;
    }
  }
  next_token_ = static_cast<uint64_t>(GetInt(root, "next_token").value_or(1));
  return Status::Ok();
}

}  // namespace hcprp::provisioning
