#include "provisioning/engine.h"

#include <algorithm>
#include <filesystem>

#include "core/time.h"
#include "core/uuid.h"
#include "provisioning/crash_point.h"
#include "provisioning/snapshot.h"

namespace hcprp::provisioning {

namespace {

using simulator::Operation;

// Set while the engine itself calls the sink, so that Next() recognises its own moves.
thread_local bool t_engine_transition = false;

// Crash points of the step this thread runs, reached once the step is committed.
thread_local std::vector<std::string> t_committed_points;

void AfterCommit(std::string name) {
  if (CrashPointsArmed()) t_committed_points.push_back(std::move(name));
}

void ReachCommittedPoints() {
  if (t_committed_points.empty()) return;
  std::vector<std::string> points;
  points.swap(t_committed_points);
  for (const auto& p : points) CrashPoint(p);
}

std::string KindOf(std::string_view href) {
  if (href.find("/node_pools/") != std::string_view::npos) return "nodepool";
  if (href.find("/external_auth_configs/") != std::string_view::npos) return "externalauth";
  return "cluster";
}

enum class SvcState { kPending, kCreating, kReady, kFailed, kDeleting, kDeleted, kDeletionFailed };

std::string_view SvcStateName(SvcState s) {
  switch (s) {
    case SvcState::kPending:
      return "Pending";
    case SvcState::kCreating:
      return "Creating";
    case SvcState::kReady:
      return "Ready";
    case SvcState::kFailed:
      return "Failed";
    case SvcState::kDeleting:
      return "Deleting";
    case SvcState::kDeleted:
      return "Deleted";
    case SvcState::kDeletionFailed:
      return "DeletionFailed";
  }
  return "Pending";
}

SvcState ParseSvcState(std::string_view s) {
  for (SvcState v : {SvcState::kPending, SvcState::kCreating, SvcState::kReady, SvcState::kFailed,
                     SvcState::kDeleting, SvcState::kDeleted, SvcState::kDeletionFailed}) {
    if (SvcStateName(v) == s) return v;
  }
  return SvcState::kPending;
}

int64_t Ms(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
TimePoint FromMs(int64_t ms) { return TimePoint(std::chrono::milliseconds(ms)); }

std::string LastSegment(std::string_view href) {
  size_t p = href.rfind('/');
  return std::string(p == std::string_view::npos ? href : href.substr(p + 1));
}

// The cluster's href of a child's href, or "" for a cluster.
std::string ParentOf(std::string_view href) {
  for (std::string_view sep : {"/node_pools/", "/external_auth_configs/"}) {
    size_t p = href.find(sep);
    if (p != std::string_view::npos) return std::string(href.substr(0, p));
  }
  return "";
}

constexpr std::string_view kRoleNamespace = "3f2a9c1e-5b7d-4e8f-9a6b-1c2d3e4f5a6b";

// How much later than due a worker may take a piece of work (real time, not scaled): the dispatcher
// wakes once for all the timers within it.
constexpr Duration kTimerSlack = std::chrono::milliseconds(1);

// The services of a machine, in creation order.
constexpr ResourceType kMachineServices[] = {ResourceType::kPublicIp,       ResourceType::kNetworkInterface,
                                             ResourceType::kDisk,           ResourceType::kVirtualMachine,
                                             ResourceType::kRoleAssignment, ResourceType::kVmExtension};

}  // namespace

json::object EngineMetrics::ToJson() const {
  return json::object{{"reconciles", reconciles},
                      {"calls", calls},
                      {"futures_stored", futures_stored},
                      {"completed_within_timeout", completed_within_timeout},
                      {"throttled", throttled},
                      {"failures", failures},
                      {"credential_failures", credential_failures},
                      {"orphaned_machines", orphaned_machines},
                      {"orphaned_control_planes", orphaned_control_planes},
                      {"first_party_group_deletions", first_party_group_deletions},
                      {"transitions", transitions}};
}

struct Engine::Svc {
  ResourceType type = ResourceType::kPublicIp;
  std::string id;
  std::string caller;
  SvcState state = SvcState::kPending;
  std::string fut_type;  // "create", "delete" or ""
  std::string fut_token;
  bool fut_stored = false;  // the operation outlived the client timeout
  int attempts = 0;
  int err_status = 0;
  std::string err_code, err_message;
  bool orphaned = false;  // deletion skipped (invalid credentials)
  TimePoint since{};
};

struct Engine::Unit {
  std::string key;
  std::string owner;    // the node pool's or cluster's href
  std::string cluster;  // the cluster's href
  std::string name;
  int64_t index = 0;
  bool control_plane = false;
  bool deleting = false;
  bool orphaned = false;
  std::vector<Svc> svcs;

  bool Done() const {
    if (orphaned) return deleting;
    for (const auto& s : svcs) {
      if (deleting ? s.state != SvcState::kDeleted : s.state != SvcState::kReady) return false;
    }
    return true;
  }
  bool AnyFailed(std::string* code, std::string* message) const {
    for (const auto& s : svcs) {
      if (s.state == SvcState::kFailed || s.state == SvcState::kDeletionFailed) {
        *code = s.err_code;
        *message = std::string(ShortName(s.type)) + " " + s.id + ": " + s.err_message;
        return true;
      }
    }
    return false;
  }
};

struct Engine::Obj {
  std::string href, kind, cluster, name;
  Operation op = Operation::kCreate;
  std::string cs_state;
  std::string failure_state;
  int64_t desired = 0;
  // Clusters.
  std::string sub, mrg_id, caller;
  std::string cp_unit;
  bool creds_valid = true;
  std::string creds_reason, creds_message;
  TimePoint creds_invalid_since{};
  // Node pools.
  std::vector<std::string> machines;  // unit keys
  int64_t next_index = 0;
  int64_t orphaned = 0;
  // Clusters: machines of its node pools whose cleanup was skipped (invalid credentials); their
  // resources stay until the managed resource group goes.
  std::vector<std::string> orphaned_machines;
  bool waits_for_control_plane = false;  // its cluster queues it when the control plane is ready
  std::map<std::string, std::pair<std::string, TimePoint>> cond_since;  // type -> (status/reason, since)
  json::array conditions;
  TimePoint validated_at{};  // when validating ends (not persisted: a restart validates again)
  // Loaded from the state but not announced by the Cluster Service after a restart: it no longer has
  // the object, so the engine deletes what is left in Azure and tells it nothing (not persisted).
  bool unknown = false;
};

struct Engine::Pending {
  std::string href, state, code, message;
  bool conditions = false;
  json::array conds;
  std::string enqueue;  // a key to queue once the transitions before it are applied
};

Engine::Engine(const EngineOptions& options) : options_(options) {}

Engine::~Engine() { Stop(); }

Duration Engine::Scaled(Duration d) const {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(d.count()) *
                                              options_.time_scale);
}

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  if (!options.clock || !options.azure)
    return Error::InvalidArgument("EngineOptions needs a clock and an azure");
  if (options.concurrency < 1) return Error::InvalidArgument("EngineOptions.concurrency must be at least 1");
  std::unique_ptr<Engine> e(new Engine(options));
  HCPRP_RETURN_IF_ERROR(e->Load());
  return e;
}

void Engine::Attach(StateSink* sink) { sink_ = sink; }

void Engine::Start() {
  if (started_.exchange(true)) return;
  for (int i = 0; i < options_.concurrency; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  dispatcher_ = std::thread([this] { DispatchLoop(); });
}

void Engine::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  timer_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (dispatcher_.joinable()) dispatcher_.join();
  {
    // Due work not taken yet goes back to the timers (RunDueForTest, a later Start()).
    std::lock_guard lock(mu_);
    const TimePoint now = options_.clock->Now();
    std::deque<std::string> left;
    left.swap(ready_);
    in_ready_.clear();
    for (const auto& key : left) EnqueueLocked(key, now);
  }
  (void)Flush();
  {
    std::lock_guard lock(mu_);
    stopping_ = false;  // RunDueForTest stays usable
    dispatcher_wakes_ = TimePoint::max();
  }
  started_ = false;
}

Duration Engine::CredentialIssueTime() { return Scaled(options_.credential_issue_time); }
Duration Engine::RevocationTime() { return Scaled(options_.revocation_time); }

void Engine::EnqueueLocked(const std::string& key, TimePoint at) {
  auto it = queued_.find(key);
  if (it != queued_.end() && it->second <= at) return;
  queued_[key] = at;
  timers_.emplace(at, key);
  if (at + kTimerSlack < dispatcher_wakes_) {
    dispatcher_wakes_ = at;
    timer_cv_.notify_one();
  }
}

std::optional<simulator::Step> Engine::Next(const simulator::ObjectInfo& info) {
  if (t_engine_transition) return std::nullopt;
  // Break-glass credentials need nothing in Azure: the simulator runs them on its own.
  if (info.kind != simulator::kCluster && info.kind != simulator::kNodePool &&
      info.kind != simulator::kExternalAuth) {
    return std::nullopt;
  }
  const std::string href(info.href);
  std::lock_guard lock(mu_);
  Obj& o = objs_[href];
  announced_.insert(href);
  dirty_objs_.insert(href);
  o.unknown = false;
  o.href = href;
  o.kind = std::string(info.kind);
  o.cluster = info.kind == simulator::kCluster ? href : ParentOf(href);
  o.op = info.operation;
  o.cs_state = std::string(info.state);
  o.failure_state = std::string(info.failure_state);
  const json::object& obj = *info.object;
  o.name = std::string(GetString(obj, "name").value_or(LastSegment(href)));
  if (info.kind == simulator::kCluster) {
    const json::object* az = GetObject(obj, "azure");
    json::object empty;
    if (!az) az = &empty;
    o.sub = std::string(GetString(*az, "subscription_id").value_or("00000000-0000-0000-0000-000000000000"));
    const std::string rg(GetString(*az, "resource_group_name").value_or("rg"));
    std::string mrg(GetString(*az, "managed_resource_group_name").value_or(""));
    if (mrg.empty()) mrg = "arohcp-" + o.name + "-" + LastSegment(href).substr(0, 8);
    o.mrg_id = "/subscriptions/" + o.sub + "/resourceGroups/" + mrg;
    // The customer's resources the cluster references exist in their subscription.
    SimulatedAzure& az_sim = *options_.azure;
    if (auto subnet = GetString(*az, "subnet_resource_id")) {
      std::string s(*subnet);
      az_sim.EnsureCustomerResource(ResourceType::kVirtualNetwork, s.substr(0, s.find("/subnets/")));
      az_sim.EnsureCustomerResource(ResourceType::kSubnet, s);
    }
    if (auto nsg = GetString(*az, "network_security_group_resource_id")) {
      az_sim.EnsureCustomerResource(ResourceType::kNetworkSecurityGroup, std::string(*nsg));
    }
    // CAPZ acts as the "cluster-api-azure" control plane identity (or the first one there is).
    std::string capz;
    const json::object* oa = GetObject(*az, "operators_authentication");
    const json::object* mi = oa ? GetObject(*oa, "managed_identities") : nullptr;
    if (mi) {
      for (std::string_view group :
           {"control_plane_operators_managed_identities", "data_plane_operators_managed_identities"}) {
        const json::object* g = GetObject(*mi, group);
        if (!g) continue;
        for (const auto& [k, v] : *g) {
          if (!v.is_object()) continue;
          auto id = GetString(v.as_object(), "resource_id");
          if (!id) continue;
          az_sim.EnsureCustomerResource(ResourceType::kManagedIdentity, std::string(*id));
          if (group == "control_plane_operators_managed_identities" &&
              (capz.empty() || k == "cluster-api-azure")) {
            capz = std::string(*id);
          }
        }
      }
      if (const json::object* smi = GetObject(*mi, "service_managed_identity")) {
        if (auto id = GetString(*smi, "resource_id")) {
          az_sim.EnsureCustomerResource(ResourceType::kManagedIdentity, std::string(*id));
          if (capz.empty()) capz = std::string(*id);
        }
      }
    }
    // A cluster without customer identities is provisioned by the first-party identity alone.
    if (o.caller.empty() || info.operation == Operation::kCreate)
      o.caller = capz.empty() ? std::string(kFirstParty) : capz;
  } else if (info.kind == simulator::kNodePool) {
    int64_t replicas = GetInt(obj, "replicas").value_or(0);
    if (const json::object* as = GetObject(obj, "autoscaling"))
      replicas = GetInt(*as, "min_replica").value_or(replicas);
    o.desired = std::max<int64_t>(replicas, 0);
  }
  EnqueueLocked("o:" + href, options_.clock->Now());
  return std::nullopt;
}

void Engine::MoveLocked(Obj& obj, const std::string& state, std::vector<Pending>& out,
                        const std::string& code, const std::string& message) {
  if (obj.cs_state == state) return;
  obj.cs_state = state;
  if (obj.unknown) return;
  metrics_.transitions++;
  out.push_back(Pending{obj.href, state, code, message, false, {}, ""});
}

void Engine::Apply(std::vector<Pending>& out) {
  for (auto& p : out) {
    if (!p.enqueue.empty()) {
      std::lock_guard lock(mu_);
      EnqueueLocked(p.enqueue, options_.clock->Now());
      continue;
    }
    if (!sink_) continue;
    if (p.conditions) {
      sink_->PublishConditions(p.href, p.conds);
      continue;
    }
    if (CrashPointsArmed()) CrashPoint("transition." + KindOf(p.href) + "." + p.state);
    t_engine_transition = true;
    Status st = sink_->Transition(p.href, p.state, p.code, p.message);
    t_engine_transition = false;
    if (!st.ok() && options_.logger) {
      options_.logger->Warn("cannot move an object",
                            {{"href", p.href}, {"state", p.state}, {"error", st.error().ToString()}});
    }
  }
  out.clear();
}

Engine::Unit Engine::MakeControlPlaneLocked(const Obj& cluster) {
  Unit u;
  u.key = cluster.href + "#controlplane";
  u.owner = cluster.href;
  u.cluster = cluster.href;
  u.name = "controlplane";
  u.control_plane = true;
  const std::string p = cluster.mrg_id + "/providers/";
  u.svcs.push_back(Svc{ResourceType::kResourceGroup, cluster.mrg_id, std::string(kFirstParty)});
  u.svcs.push_back(Svc{ResourceType::kPublicIp, p + "Microsoft.Network/publicIPAddresses/kube-apiserver-pip",
                       cluster.caller});
  u.svcs.push_back(
      Svc{ResourceType::kLoadBalancer, p + "Microsoft.Network/loadBalancers/kube-apiserver", cluster.caller});
  u.svcs.push_back(
      Svc{ResourceType::kRoleAssignment,
          p + "Microsoft.Authorization/roleAssignments/" + UuidV5(kRoleNamespace, cluster.href + "#cp"),
          cluster.caller});
  return u;
}

Engine::Unit Engine::MakeMachineLocked(const Obj& pool, const Obj& cluster, int64_t index) {
  Unit u;
  u.name = pool.name + "-" + std::to_string(index);
  u.key = pool.href + "#" + u.name;
  u.owner = pool.href;
  u.cluster = cluster.href;
  u.index = index;
  const std::string p = cluster.mrg_id + "/providers/";
  const std::string vm = p + "Microsoft.Compute/virtualMachines/" + u.name;
  for (ResourceType t : kMachineServices) {
    std::string id;
    switch (t) {
      case ResourceType::kPublicIp:
        id = p + "Microsoft.Network/publicIPAddresses/" + u.name + "-pip";
        break;
      case ResourceType::kNetworkInterface:
        id = p + "Microsoft.Network/networkInterfaces/" + u.name + "-nic";
        break;
      case ResourceType::kDisk:
        id = p + "Microsoft.Compute/disks/" + u.name + "-osdisk";
        break;
      case ResourceType::kVirtualMachine:
        id = vm;
        break;
      case ResourceType::kRoleAssignment:
        id = p + "Microsoft.Authorization/roleAssignments/" + UuidV5(kRoleNamespace, vm);
        break;
      default:
        id = vm + "/extensions/node-bootstrap";
        break;
    }
    u.svcs.push_back(Svc{t, id, cluster.caller});
  }
  return u;
}

void Engine::ReconcileUnit(const std::string& key) {
  Unit u;
  TimePoint creds_since{};
  bool creds_invalid = false;
  {
    std::lock_guard lock(mu_);
    auto it = units_.find(key);
    if (it == units_.end()) return;
    u = it->second;
    auto c = objs_.find(u.cluster);
    if (c != objs_.end() && !c->second.creds_valid) {
      creds_invalid = true;
      creds_since = c->second.creds_invalid_since;
    }
    metrics_.reconciles++;
  }
  SimulatedAzure& az = *options_.azure;
  const TimePoint now = options_.clock->Now();
  const Duration threshold = Scaled(options_.orphan_threshold);
  std::optional<TimePoint> next;
  int64_t calls = 0, stored = 0, within = 0, throttled = 0, failures = 0, cred_failures = 0, orphaned_cp = 0,
          group_deletions = 0;
  // Credential outcome seen in this reconcile: +1 valid, -1 invalid.
  int creds_seen = 0;
  std::string creds_reason, creds_message;
  // What the conditions show of each service, to tell whether this reconcile changed any.
  std::vector<std::pair<SvcState, std::string>> before;
  before.reserve(u.svcs.size());
  for (const auto& s : u.svcs) before.emplace_back(s.state, s.err_message);

  for (size_t guard = 0; guard < u.svcs.size() * 3 + 3 && !(u.deleting && u.orphaned); ++guard) {
    int idx = -1;
    if (!u.deleting) {
      for (size_t i = 0; i < u.svcs.size(); ++i) {
        if (u.svcs[i].state != SvcState::kReady) {
          idx = static_cast<int>(i);
          break;
        }
      }
    } else {
      for (int i = static_cast<int>(u.svcs.size()) - 1; i >= 0; --i) {
        if (u.svcs[i].state != SvcState::kDeleted) {
          idx = i;
          break;
        }
      }
    }
    if (idx < 0) break;
    Svc& s = u.svcs[idx];
    AzureCall r;
    ++calls;
    AfterCommit(std::string(u.control_plane ? "controlplane." : "machine.") +
                (u.deleting ? "delete." : "create.") + std::string(ShortName(s.type)));
    if (u.deleting) {
      if (s.fut_type == "delete") {
        r = az.Poll(s.caller, s.fut_token);
        if (r.outcome == AzureCall::Outcome::kFailed && r.http_status == 404)
          r = az.BeginDelete(s.caller, s.id);
      } else {
        r = az.BeginDelete(s.caller, s.id);
        if (s.type == ResourceType::kResourceGroup && r.outcome == AzureCall::Outcome::kPending)
          ++group_deletions;
      }
    } else {
      if (s.fut_type == "create") {
        r = az.Poll(s.caller, s.fut_token);
        // The operation's answer was already read (e.g. before a restart): PUT again, which adopts a
        // running operation or answers the existing resource instead of starting another.
        if (r.outcome == AzureCall::Outcome::kFailed && r.http_status == 404)
          r = az.BeginCreate(s.caller, s.type, s.id);
      } else {
        r = az.BeginCreate(s.caller, s.type, s.id);
      }
    }
    if (s.caller != kFirstParty) {
      if (r.credential_error()) {
        creds_seen = -1;
        creds_reason = r.http_status == 401 ? "IdentityNotFound" : "AuthorizationFailed";
        creds_message = r.message;
      } else if (r.outcome != AzureCall::Outcome::kThrottled && creds_seen == 0) {
        creds_seen = 1;
      }
    }
    const SvcState prev = s.state;
    if (r.outcome == AzureCall::Outcome::kDone) {
      s.state = u.deleting ? SvcState::kDeleted : SvcState::kReady;
      s.fut_type.clear();
      s.fut_token.clear();
      s.fut_stored = false;
      s.attempts = 0;
      s.err_status = 0;
      s.err_code.clear();
      s.err_message.clear();
      if (s.state != prev) s.since = now;
      continue;
    }
    if (r.outcome == AzureCall::Outcome::kPending) {
      s.state = u.deleting ? SvcState::kDeleting : SvcState::kCreating;
      s.fut_type = u.deleting ? "delete" : "create";
      s.fut_token = r.token;
      if (r.done_at - now <= Scaled(options_.client_timeout)) {
        // The call would have returned within the client timeout: carry on when it does.
        if (!s.fut_stored) ++within;
      } else if (!s.fut_stored) {
        s.fut_stored = true;
        ++stored;
      }
      if (s.state != prev) s.since = now;
      // Retry-After counts from the answer, not from the start of this reconcile (earlier calls took
      // time): counted from `now`, the poll comes before the operation is done and wastes a round.
      next = options_.clock->Now() + std::max(r.retry_after, Duration(std::chrono::milliseconds(1)));
      break;
    }
    if (r.outcome == AzureCall::Outcome::kThrottled) {
      ++throttled;
      s.err_status = 429;
      s.err_code = r.code;
      s.err_message = r.message;
      next = options_.clock->Now() + std::max(r.retry_after, Duration(std::chrono::milliseconds(1)));
      break;
    }
    // Failed.
    ++failures;
    s.attempts++;
    s.err_status = r.http_status;
    s.err_code = r.code;
    s.err_message = r.message;
    s.fut_type.clear();
    s.fut_token.clear();
    s.fut_stored = false;
    s.state = u.deleting ? SvcState::kDeletionFailed : SvcState::kFailed;
    if (s.state != prev) s.since = now;
    const Duration backoff = std::min(Scaled(options_.backoff_base) * (1 << std::min(s.attempts - 1, 10)),
                                      Scaled(options_.backoff_max));
    if (r.credential_error()) {
      ++cred_failures;
      if (!creds_invalid) {
        creds_invalid = true;
        creds_since = now;
      }
      if (u.deleting) {
        if (now - creds_since >= threshold) {
          // Seed 003: skip the cleanup the customer's identity can no longer do; the first-party
          // identity deletes the managed resource group with everything in it.
          if (u.control_plane) {
            for (auto& o : u.svcs) {
              if (o.caller != kFirstParty && o.state != SvcState::kDeleted) {
                o.state = SvcState::kDeleted;
                o.orphaned = true;
                o.since = now;
              }
            }
            ++orphaned_cp;
            AfterCommit("orphan.controlplane");
            continue;
          }
          AfterCommit("orphan.machine");
          u.orphaned = true;
          break;
        }
        next = now + std::min(backoff, creds_since + threshold - now);
        break;
      }
    }
    next = now + backoff;
    break;
  }

  bool changed = u.orphaned;
  for (size_t i = 0; i < u.svcs.size() && !changed; ++i) {
    changed = u.svcs[i].state != before[i].first || u.svcs[i].err_message != before[i].second;
  }
  std::lock_guard lock(mu_);
  metrics_.calls += calls;
  metrics_.futures_stored += stored;
  metrics_.completed_within_timeout += within;
  metrics_.throttled += throttled;
  metrics_.failures += failures;
  metrics_.credential_failures += cred_failures;
  metrics_.orphaned_control_planes += orphaned_cp;
  metrics_.first_party_group_deletions += group_deletions;
  auto it = units_.find(key);
  if (it == units_.end()) return;
  it->second.svcs = std::move(u.svcs);
  dirty_units_.insert(key);
  dirty_objs_.insert(u.cluster);  // its credentials' validity
  if (u.orphaned && !it->second.orphaned) {
    it->second.orphaned = true;
    metrics_.orphaned_machines++;
    if (options_.logger) {
      options_.logger->Warn("skipping cleanup of a machine because of invalid Azure identity",
                            {{"machine", u.name}, {"node_pool", u.owner}});
    }
  }
  if (orphaned_cp && options_.logger) {
    options_.logger->Warn("skipping cleanup of the control plane because of invalid Azure identity",
                          {{"cluster", u.cluster}});
  }
  bool creds_changed_any = false;
  auto c = objs_.find(u.cluster);
  if (c != objs_.end()) {
    Obj& cl = c->second;
    bool creds_changed = false;
    if (creds_seen < 0 && cl.creds_valid) {
      cl.creds_valid = false;
      cl.creds_invalid_since = creds_since;
      creds_changed = true;
    }
    if (creds_seen < 0) {
      creds_changed = creds_changed || cl.creds_reason != creds_reason;
      cl.creds_reason = creds_reason;
      cl.creds_message = creds_message;
    } else if (creds_seen > 0 && !cl.creds_valid) {
      cl.creds_valid = true;
      cl.creds_reason.clear();
      cl.creds_message.clear();
      creds_changed = true;
    }
    changed = changed || creds_changed;
    creds_changed_any = creds_changed;
    // The cluster's AzureIdentityValid condition follows what its machines see.
    if (creds_changed && u.cluster != u.owner) EnqueueLocked("o:" + u.cluster, now);
  }
  if (next) EnqueueLocked("u:" + key, *next);
  if (changed) {
    // The last machine of a node pool to finish finishes the pool: roll up now. Progress only changes
    // conditions, which many machines' progress share.
    bool finishes_owner = creds_changed_any || it->second.control_plane;
    if (!finishes_owner && it->second.Done()) {
      auto o = objs_.find(u.owner);
      finishes_owner = o == objs_.end() || std::all_of(o->second.machines.begin(), o->second.machines.end(),
                                                       [&](const std::string& k) {
                                                         auto m = units_.find(k);
                                                         return m == units_.end() || m->second.Done();
                                                       });
    }
    EnqueueLocked("o:" + u.owner, finishes_owner ? now : now + Scaled(options_.rollup_interval));
  }
}

bool Engine::ValidatingLocked(Obj& obj) {
  if (obj.cs_state != "validating" && obj.cs_state != "validating_update") {
    obj.validated_at = TimePoint{};
    return false;
  }
  if (options_.validation_time <= Duration::zero()) return false;
  const TimePoint now = options_.clock->Now();
  if (obj.validated_at == TimePoint{}) obj.validated_at = now + Scaled(options_.validation_time);
  if (now >= obj.validated_at) return false;
  EnqueueLocked("o:" + obj.href, obj.validated_at);
  return true;
}

void Engine::ReconcileObjectLocked(Obj& obj, std::vector<Pending>& out) {
  metrics_.reconciles++;
  if (obj.op != Operation::kDelete && ValidatingLocked(obj)) return;
  if (obj.kind == simulator::kCluster) return ReconcileClusterLocked(obj, out);
  if (obj.kind == simulator::kNodePool) return ReconcilePoolLocked(obj, out);
  // External auths need nothing in Azure.
  if (obj.op == Operation::kDelete) {
    const std::string href = obj.href, cluster = obj.cluster;
    if (!obj.unknown) out.push_back(Pending{href, std::string(simulator::kGone), "", "", false, {}, ""});
    out.push_back(Pending{"", "", "", "", false, {}, "o:" + cluster});
    objs_.erase(href);
    return;
  }
  if (obj.cs_state == "validating") MoveLocked(obj, "installing", out);
  MoveLocked(obj, obj.failure_state.empty() ? "ready" : obj.failure_state, out);
}

void Engine::ReconcileClusterLocked(Obj& obj, std::vector<Pending>& out) {
  const TimePoint now = options_.clock->Now();
  if (obj.op == Operation::kDelete) {
    const std::string prefix = obj.href + "/";
    if (auto it = objs_.lower_bound(prefix); it != objs_.end() && it->first.rfind(prefix, 0) == 0) {
      return;  // children first
    }
    if (!obj.cp_unit.empty()) {
      Unit& u = units_.at(obj.cp_unit);
      if (!u.deleting) {
        u.deleting = true;
        EnqueueLocked("u:" + u.key, now);
      }
      RollUpLocked(obj, out);
      if (!u.Done()) return;
      units_.erase(obj.cp_unit);
    }
    const std::string href = obj.href;
    if (!obj.unknown) out.push_back(Pending{href, std::string(simulator::kGone), "", "", false, {}, ""});
    objs_.erase(href);
    return;
  }
  if (obj.op == Operation::kCreate) {
    if (obj.cs_state == "validating") MoveLocked(obj, "pending", out);
    if (obj.cs_state == "pending") MoveLocked(obj, "installing", out);
  }
  if (obj.cp_unit.empty()) {
    Unit u = MakeControlPlaneLocked(obj);
    obj.cp_unit = u.key;
    units_[u.key] = std::move(u);
    EnqueueLocked("u:" + obj.cp_unit, now);
  }
  RollUpLocked(obj, out);
  const Unit& u = units_.at(obj.cp_unit);
  std::string code, message;
  if (u.Done()) {
    const std::string target = obj.failure_state.empty() ? "ready" : obj.failure_state;
    MoveLocked(obj, target, out);
    // The node pools that waited for the control plane go on once the cluster has moved.
    const std::string prefix = obj.href + "/";
    for (auto it = objs_.lower_bound(prefix); it != objs_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      if (!it->second.waits_for_control_plane) continue;
      it->second.waits_for_control_plane = false;
      out.push_back(Pending{"", "", "", "", false, {}, "o:" + it->first});
    }
  } else if (u.AnyFailed(&code, &message)) {
    MoveLocked(obj, "error", out, code, message);
  } else if (obj.cs_state == "error") {
    MoveLocked(obj, obj.op == Operation::kUpdate ? "updating" : "installing", out);
  }
}

void Engine::ReconcilePoolLocked(Obj& obj, std::vector<Pending>& out) {
  const TimePoint now = options_.clock->Now();
  auto remove_finished = [&] {
    std::erase_if(obj.machines, [&](const std::string& k) {
      auto it = units_.find(k);
      if (it == units_.end()) return true;
      if (!it->second.deleting || !it->second.Done()) return false;
      if (it->second.orphaned) {
        obj.orphaned++;
        if (auto c = objs_.find(obj.cluster); c != objs_.end()) {
          c->second.orphaned_machines.push_back(it->second.name);
          dirty_objs_.insert(obj.cluster);
        }
      }
      units_.erase(it);
      return true;
    });
  };
  if (obj.op == Operation::kDelete) {
    for (const auto& k : obj.machines) {
      Unit& u = units_.at(k);
      if (!u.deleting) {
        u.deleting = true;
        EnqueueLocked("u:" + k, now);
      }
    }
    remove_finished();
    RollUpLocked(obj, out);
    if (!obj.machines.empty()) return;
    const std::string href = obj.href, cluster = obj.cluster;
    if (!obj.unknown) out.push_back(Pending{href, std::string(simulator::kGone), "", "", false, {}, ""});
    out.push_back(Pending{"", "", "", "", false, {}, "o:" + cluster});
    objs_.erase(href);
    return;
  }
  const bool create = obj.op == Operation::kCreate;
  if (obj.cs_state == "validating") MoveLocked(obj, "pending", out);
  if (obj.cs_state == "validating_update") MoveLocked(obj, "pending_update", out);
  auto c = objs_.find(obj.cluster);
  if (c == objs_.end() || c->second.cp_unit.empty() || !units_.count(c->second.cp_unit) ||
      !units_.at(c->second.cp_unit).Done() || c->second.op == Operation::kDelete) {
    obj.waits_for_control_plane = true;  // the cluster queues it when its control plane is ready
    return;
  }
  const Obj& cluster = c->second;
  if (obj.cs_state == "pending") MoveLocked(obj, "installing", out);
  if (obj.cs_state == "pending_update") MoveLocked(obj, "updating", out);
  remove_finished();
  std::vector<size_t> active;  // indexes into obj.machines
  for (size_t i = 0; i < obj.machines.size(); ++i) {
    if (!units_.at(obj.machines[i]).deleting) active.push_back(i);
  }
  while (static_cast<int64_t>(active.size()) < obj.desired) {
    Unit u = MakeMachineLocked(obj, cluster, obj.next_index++);
    const std::string k = u.key;
    units_[k] = std::move(u);
    obj.machines.push_back(k);
    active.push_back(obj.machines.size() - 1);
    EnqueueLocked("u:" + k, now);
    if (obj.cs_state == "updating") AfterCommit("scale.up");
  }
  while (static_cast<int64_t>(active.size()) > obj.desired) {
    Unit& u = units_.at(obj.machines[active.back()]);
    u.deleting = true;
    EnqueueLocked("u:" + u.key, now);
    active.pop_back();
    AfterCommit("scale.down");
  }
  RollUpLocked(obj, out);
  bool all_ready = active.size() == obj.machines.size();
  std::string code, message;
  bool failed = false;
  for (const auto& k : obj.machines) {
    const Unit& u = units_.at(k);
    if (!u.Done()) all_ready = false;
    if (!failed && u.AnyFailed(&code, &message)) failed = true;
  }
  if (all_ready) {
    MoveLocked(obj, obj.failure_state.empty() ? "ready" : obj.failure_state, out);
  } else if (failed) {
    MoveLocked(obj, "error", out, code, message);
  } else if (obj.cs_state == "error" || obj.cs_state == "ready") {
    MoveLocked(obj, create && obj.cs_state == "error" ? "installing" : "updating", out);
  }
}

void Engine::RollUpLocked(Obj& obj, std::vector<Pending>& out) {
  const TimePoint now = options_.clock->Now();
  std::vector<const Unit*> units;
  if (obj.kind == simulator::kCluster) {
    if (!obj.cp_unit.empty() && units_.count(obj.cp_unit)) units.push_back(&units_.at(obj.cp_unit));
  } else {
    for (const auto& k : obj.machines) units.push_back(&units_.at(k));
  }
  struct Cond {
    std::string type, status, reason, message;
  };
  std::vector<Cond> conds;
  // One condition per service, in service order.
  std::vector<ResourceType> order;
  for (const Unit* u : units) {
    for (const auto& s : u->svcs) {
      if (std::find(order.begin(), order.end(), s.type) == order.end()) order.push_back(s.type);
    }
  }
  for (ResourceType t : order) {
    int total = 0, ready = 0;
    std::map<SvcState, int> by;
    std::string first_error;
    for (const Unit* u : units) {
      for (const auto& s : u->svcs) {
        if (s.type != t) continue;
        ++total;
        if (s.state == SvcState::kReady) ++ready;
        by[s.orphaned ? SvcState::kDeleted : s.state]++;
        if (first_error.empty() && !s.err_message.empty()) first_error = u->name + ": " + s.err_message;
      }
    }
    Cond c{std::string(ConditionPrefix(t)) + "Ready", ready == total ? "True" : "False", "", ""};
    if (ready != total) {
      for (SvcState s : {SvcState::kFailed, SvcState::kDeletionFailed, SvcState::kDeleting,
                         SvcState::kCreating, SvcState::kPending, SvcState::kDeleted}) {
        if (!by.count(s)) continue;
        c.reason = s == SvcState::kPending ? "Creating" : std::string(SvcStateName(s));
        break;
      }
      c.message = std::to_string(ready) + " of " + std::to_string(total) + " ready";
      for (const auto& [s, n] : by) {
        if (s != SvcState::kReady) c.message += ", " + std::to_string(n) + " " + std::string(SvcStateName(s));
      }
      if (!first_error.empty()) c.message += "; " + first_error;
    }
    conds.push_back(std::move(c));
  }
  if (obj.kind == simulator::kNodePool) {
    int64_t ready = 0;
    for (const Unit* u : units) ready += (!u->deleting && u->Done()) ? 1 : 0;
    Cond c{"MachinesReady",
           ready == obj.desired && units.size() == static_cast<size_t>(obj.desired) ? "True" : "False", "",
           std::to_string(ready) + " of " + std::to_string(obj.desired) + " machines ready"};
    if (c.status == "False") c.reason = obj.op == Operation::kDelete ? "Deleting" : "Creating";
    if (obj.orphaned) c.message += "; " + std::to_string(obj.orphaned) + " orphaned (invalid Azure identity)";
    conds.push_back(std::move(c));
  }
  if (obj.kind == simulator::kCluster) {
    conds.push_back(obj.creds_valid ? Cond{"AzureIdentityValid", "True", "", ""}
                                    : Cond{"AzureIdentityValid", "False", obj.creds_reason,
                                           "The cluster's managed identity credentials are invalid: " +
                                               obj.creds_message});
  }
  json::array arr;
  for (auto& c : conds) {
    auto& since = obj.cond_since[c.type];
    const std::string sig = c.status + "/" + c.reason;
    if (since.first != sig) since = {sig, now};
    json::object j{
        {"type", c.type}, {"status", c.status}, {"lastTransitionTime", FormatRfc3339(since.second)}};
    if (!c.reason.empty()) j["reason"] = c.reason;
    if (!c.message.empty()) j["message"] = c.message;
    arr.push_back(std::move(j));
  }
  if (arr == obj.conditions) return;
  obj.conditions = std::move(arr);
  out.push_back(Pending{obj.href, "", "", "", true, obj.conditions, ""});
}

void Engine::DispatchLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    dispatcher_wakes_ = TimePoint::min();
    const TimePoint now = options_.clock->Now();
    size_t moved = 0;
    while (!timers_.empty() && timers_.begin()->first <= now) {
      auto node = timers_.extract(timers_.begin());
      const std::string& key = node.mapped();
      auto q = queued_.find(key);
      if (q == queued_.end() || q->second != node.key()) continue;  // superseded by an earlier queueing
      queued_.erase(q);
      if (!in_ready_.insert(key).second) continue;
      ready_.push_back(std::move(node.mapped()));
      ++moved;
    }
    if (moved >= workers_.size()) {
      ready_cv_.notify_all();
    } else {
      for (size_t i = 0; i < moved; ++i) ready_cv_.notify_one();
    }
    // Never sleep long: a FakeClock moves without notifying anyone. Timers due within the slack of the
    // first one go together: one wake-up per batch, not per timer.
    TimePoint wake = now + std::chrono::milliseconds(50);
    if (!timers_.empty()) wake = std::min(wake, timers_.begin()->first + kTimerSlack);
    dispatcher_wakes_ = wake;
    timer_cv_.wait_for(lock, wake - now);
  }
}

void Engine::WorkerLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (ready_.empty()) {
      ready_cv_.wait(lock);
      continue;
    }
    std::string key = std::move(ready_.front());
    ready_.pop_front();
    in_ready_.erase(key);
    RunKey(lock, key);
  }
}

void Engine::RunKey(std::unique_lock<std::mutex>& lock, const std::string& key) {
  if (running_.count(key)) {
    rerun_.insert(key);
    return;
  }
  running_.insert(key);
  if (key.rfind("u:", 0) == 0) {
    lock.unlock();
    ReconcileUnit(key.substr(2));
    lock.lock();
    (void)CommitLocked();
    ReachCommittedPoints();
  } else {
    std::vector<Pending> out;
    const std::string href = key.substr(2);
    auto it = objs_.find(href);
    if (it != objs_.end()) {
      TouchObjectLocked(href);
      ReconcileObjectLocked(it->second, out);
      TouchObjectLocked(href);
    }
    // Written before the Cluster Service hears of it: after a crash in between it announces the
    // object again and the engine, which already has the step, repeats only the transition.
    (void)CommitLocked();
    ReachCommittedPoints();
    lock.unlock();
    Apply(out);
    lock.lock();
  }
  running_.erase(key);
  if (rerun_.erase(key)) EnqueueLocked(key, options_.clock->Now());
}

size_t Engine::RunDueForTest(int max_rounds) {
  size_t ran = 0;
  for (int round = 0; round < max_rounds; ++round) {
    std::vector<std::string> due;
    {
      std::lock_guard lock(mu_);
      const TimePoint now = options_.clock->Now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        auto [at, key] = *timers_.begin();
        timers_.erase(timers_.begin());
        auto q = queued_.find(key);
        if (q == queued_.end() || q->second != at) continue;
        queued_.erase(q);
        due.push_back(key);
      }
    }
    if (due.empty()) break;
    for (const auto& key : due) {
      ++ran;
      if (key.rfind("u:", 0) == 0) {
        ReconcileUnit(key.substr(2));
        std::lock_guard lock(mu_);
        (void)CommitLocked();
        ReachCommittedPoints();
        continue;
      }
      std::vector<Pending> out;
      {
        std::lock_guard lock(mu_);
        const std::string href = key.substr(2);
        auto it = objs_.find(href);
        if (it != objs_.end()) {
          TouchObjectLocked(href);
          ReconcileObjectLocked(it->second, out);
          TouchObjectLocked(href);
        }
        (void)CommitLocked();
        ReachCommittedPoints();
      }
      Apply(out);
    }
  }
  return ran;
}

std::optional<TimePoint> Engine::NextDueForTest() const {
  std::lock_guard lock(mu_);
  std::optional<TimePoint> best;
  for (const auto& [k, t] : queued_) {
    if (!best || t < *best) best = t;
  }
  return best;
}

json::array Engine::Conditions(const std::string& href) const {
  std::lock_guard lock(mu_);
  auto it = objs_.find(href);
  return it == objs_.end() ? json::array{} : it->second.conditions;
}

json::object Engine::UnitJsonLocked(const Unit& u) const {
  json::array svcs;
  json::array futures;
  for (const auto& s : u.svcs) {
    json::object j{
        {"type", ShortName(s.type)}, {"id", s.id}, {"state", SvcStateName(s.state)}, {"identity", s.caller}};
    if (s.orphaned) j["orphaned"] = true;
    if (!s.err_message.empty())
      j["error"] = json::object{{"status", s.err_status}, {"code", s.err_code}, {"message", s.err_message}};
    svcs.push_back(std::move(j));
    if (s.fut_stored) {
      futures.push_back(json::object{
          {"type", s.fut_type}, {"serviceName", ShortName(s.type)}, {"name", s.id}, {"data", s.fut_token}});
    }
  }
  return json::object{{"name", u.name},
                      {"deleting", u.deleting},
                      {"orphaned", u.orphaned},
                      {"services", std::move(svcs)},
                      {"longRunningOperationStates", std::move(futures)}};
}

Result<json::object> Engine::ClusterView(const std::string& cluster_href) const {
  std::lock_guard lock(mu_);
  auto it = objs_.find(cluster_href);
  if (it == objs_.end() || it->second.kind != simulator::kCluster) {
    return Error::NotFound("cluster '" + cluster_href + "' is not known to the provisioning engine");
  }
  const Obj& c = it->second;
  json::object out{{"href", c.href},
                   {"state", c.cs_state},
                   {"managed_resource_group", c.mrg_id},
                   {"identity", c.caller},
                   {"conditions", c.conditions}};
  if (!c.cp_unit.empty() && units_.count(c.cp_unit))
    out["control_plane"] = UnitJsonLocked(units_.at(c.cp_unit));
  json::array pools;
  for (const auto& [h, o] : objs_) {
    if (o.cluster != c.href || o.kind != simulator::kNodePool) continue;
    json::array machines;
    for (const auto& k : o.machines) machines.push_back(UnitJsonLocked(units_.at(k)));
    pools.push_back(json::object{{"href", h},
                                 {"state", o.cs_state},
                                 {"replicas", o.desired},
                                 {"orphaned_machines", o.orphaned},
                                 {"conditions", o.conditions},
                                 {"machines", std::move(machines)}});
  }
  out["node_pools"] = std::move(pools);
  out["orphaned_machines"] = json::value_from(c.orphaned_machines);
  return out;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard lock(mu_);
  return metrics_;
}

size_t Engine::object_count() const {
  std::lock_guard lock(mu_);
  return objs_.size();
}

size_t Engine::machine_count() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [k, u] : units_) n += u.control_plane ? 0 : 1;
  return n;
}

namespace {

constexpr std::string_view kObjectSpace = "engine.object";
constexpr std::string_view kUnitSpace = "engine.unit";

}  // namespace

json::object Engine::ObjDocLocked(const Obj& o) const {
  json::object cs;
  for (const auto& [t, p] : o.cond_since)
    cs[t] = json::array{json::value(p.first), json::value(Ms(p.second))};
  return json::object{{"href", o.href},
                      {"kind", o.kind},
                      {"cluster", o.cluster},
                      {"name", o.name},
                      {"op", simulator::OperationName(o.op)},
                      {"cs_state", o.cs_state},
                      {"failure_state", o.failure_state},
                      {"desired", o.desired},
                      {"sub", o.sub},
                      {"mrg_id", o.mrg_id},
                      {"caller", o.caller},
                      {"cp_unit", o.cp_unit},
                      {"creds_valid", o.creds_valid},
                      {"creds_reason", o.creds_reason},
                      {"creds_message", o.creds_message},
                      {"creds_invalid_since_ms", Ms(o.creds_invalid_since)},
                      {"machines", json::value_from(o.machines)},
                      {"next_index", o.next_index},
                      {"orphaned", o.orphaned},
                      {"orphaned_machines", json::value_from(o.orphaned_machines)},
                      {"cond_since", std::move(cs)}};
}

json::object Engine::UnitDocLocked(const Unit& u) const {
  json::array svcs;
  for (const auto& s : u.svcs) {
    // An operation awaited within the client timeout is not a stored future: after a restart it is
    // found again by reading the resource (PUT/DELETE adopt the running operation).
    svcs.push_back(json::object{{"type", static_cast<int>(s.type)},
                                {"id", s.id},
                                {"caller", s.caller},
                                {"state", SvcStateName(s.state)},
                                {"fut_type", s.fut_stored ? s.fut_type : ""},
                                {"fut_token", s.fut_stored ? s.fut_token : ""},
                                {"attempts", s.attempts},
                                {"err_status", s.err_status},
                                {"err_code", s.err_code},
                                {"err_message", s.err_message},
                                {"orphaned", s.orphaned},
                                {"since_ms", Ms(s.since)}});
  }
  return json::object{{"key", u.key},           {"owner", u.owner},       {"cluster", u.cluster},
                      {"name", u.name},         {"index", u.index},       {"control_plane", u.control_plane},
                      {"deleting", u.deleting}, {"orphaned", u.orphaned}, {"svcs", std::move(svcs)}};
}

void Engine::TouchObjectLocked(const std::string& href) {
  dirty_objs_.insert(href);
  auto it = objs_.find(href);
  if (it == objs_.end()) return;
  const Obj& o = it->second;
  if (!o.cluster.empty()) dirty_objs_.insert(o.cluster);
  if (!o.cp_unit.empty()) dirty_units_.insert(o.cp_unit);
  for (const auto& k : o.machines) dirty_units_.insert(k);
}

Status Engine::CommitLocked() {
  if (!options_.state) {
    dirty_objs_.clear();
    dirty_units_.clear();
    return Status::Ok();
  }
  simulator::StateBatch batch;
  for (const auto& href : dirty_objs_) {
    auto it = objs_.find(href);
    if (it == objs_.end()) {
      batch.Delete(std::string(kObjectSpace), href);
    } else {
      batch.Put(std::string(kObjectSpace), href, ToJson(ObjDocLocked(it->second)));
    }
  }
  for (const auto& key : dirty_units_) {
    auto it = units_.find(key);
    if (it == units_.end()) {
      batch.Delete(std::string(kUnitSpace), key);
    } else {
      batch.Put(std::string(kUnitSpace), key, ToJson(UnitDocLocked(it->second)));
    }
  }
  options_.azure->TakeChanges(batch);
  Status st = options_.state->Commit(batch);
  if (!st.ok()) {
    // Kept dirty: the next commit writes them again.
    if (options_.logger)
      options_.logger->Warn("cannot commit the provisioning state", {{"error", st.error().ToString()}});
    return st;
  }
  dirty_objs_.clear();
  dirty_units_.clear();
  return Status::Ok();
}

Status Engine::Flush() {
  std::lock_guard lock(mu_);
  return CommitLocked();
}

size_t Engine::DeleteUnannounced() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  const TimePoint now = options_.clock->Now();
  for (auto& [href, o] : objs_) {
    if (announced_.count(href)) continue;
    o.unknown = true;
    o.op = Operation::kDelete;
    dirty_objs_.insert(href);
    EnqueueLocked("o:" + href, now);
    ++n;
    if (options_.logger) {
      options_.logger->Warn("deleting what is left in Azure of an object the Cluster Service no longer has",
                            {{"href", href}});
    }
  }
  return n;
}

Status Engine::Load() {
  if (!options_.state) return Status::Ok();
  auto objs = options_.state->Load(kObjectSpace);
  if (!objs.ok()) return objs.error();
  auto units = options_.state->Load(kUnitSpace);
  if (!units.ok()) return units.error();
  std::lock_guard lock(mu_);
  if (objs->empty() && units->empty()) {
    // Written by an older version as a periodic snapshot: imported once, then only the database.
    const std::string legacy = options_.state->dir() + "/engine.json";
    auto text = ReadFileIfExists(legacy);
    if (!text.ok()) return text.error();
    if (!text->has_value()) return Status::Ok();
    auto parsed = ParseJson(**text, 16);
    if (!parsed.ok() || !parsed->is_object()) return Error::Corruption(legacy + " is not a JSON object");
    HCPRP_RETURN_IF_ERROR(LoadDocs(parsed->as_object()));
    for (const auto& [h, o] : objs_) dirty_objs_.insert(h);
    for (const auto& [k, u] : units_) dirty_units_.insert(k);
    HCPRP_RETURN_IF_ERROR(CommitLocked());
    std::error_code ec;
    std::filesystem::remove(legacy, ec);
    return Status::Ok();
  }
  json::array o_docs, u_docs;
  for (const auto& [list, out] : {std::pair{&*objs, &o_docs}, std::pair{&*units, &u_docs}}) {
    for (const auto& [key, text] : *list) {
      auto v = ParseJson(text, 16);
      if (!v.ok() || !v->is_object())
        return Error::Corruption("engine document " + key + " is not a JSON object");
      out->push_back(std::move(*v));
    }
  }
  return LoadDocs(json::object{{"objects", std::move(o_docs)}, {"units", std::move(u_docs)}});
}

Status Engine::LoadDocs(const json::object& root) {
  const TimePoint now = options_.clock->Now();
  auto str = [](const json::object& o, std::string_view k) {
    return std::string(GetString(o, k).value_or(""));
  };
  if (const json::array* objs = GetArray(root, "objects")) {
    for (const auto& v : *objs) {
      if (!v.is_object()) continue;
      const json::object& j = v.as_object();
      Obj o;
      o.href = str(j, "href");
      o.kind = str(j, "kind");
      o.cluster = str(j, "cluster");
      o.name = str(j, "name");
      o.op = simulator::ParseOperation(str(j, "op")).value_or(Operation::kCreate);
      o.cs_state = str(j, "cs_state");
      o.failure_state = str(j, "failure_state");
      o.desired = GetInt(j, "desired").value_or(0);
      o.sub = str(j, "sub");
      o.mrg_id = str(j, "mrg_id");
      o.caller = str(j, "caller");
      o.cp_unit = str(j, "cp_unit");
      o.creds_valid = GetBool(j, "creds_valid").value_or(true);
      o.creds_reason = str(j, "creds_reason");
      o.creds_message = str(j, "creds_message");
      o.creds_invalid_since = FromMs(GetInt(j, "creds_invalid_since_ms").value_or(0));
      if (const json::array* m = GetArray(j, "machines")) {
        for (const auto& k : *m) {
          if (k.is_string()) o.machines.emplace_back(k.as_string());
        }
      }
      o.next_index = GetInt(j, "next_index").value_or(0);
      o.orphaned = GetInt(j, "orphaned").value_or(0);
      if (const json::array* m = GetArray(j, "orphaned_machines")) {
        for (const auto& k : *m) {
          if (k.is_string()) o.orphaned_machines.emplace_back(k.as_string());
        }
      }
      if (const json::object* cs = GetObject(j, "cond_since")) {
        for (const auto& [t, p] : *cs) {
          if (p.is_array() && p.as_array().size() == 2 && p.as_array()[0].is_string() &&
              p.as_array()[1].is_int64()) {
            o.cond_since[std::string(t)] = {std::string(p.as_array()[0].as_string()),
                                            FromMs(p.as_array()[1].as_int64())};
          }
        }
      }
      EnqueueLocked("o:" + o.href, now);
      objs_[o.href] = std::move(o);
    }
  }
  if (const json::array* units = GetArray(root, "units")) {
    for (const auto& v : *units) {
      if (!v.is_object()) continue;
      const json::object& j = v.as_object();
      Unit u;
      u.key = str(j, "key");
      u.owner = str(j, "owner");
      u.cluster = str(j, "cluster");
      u.name = str(j, "name");
      u.index = GetInt(j, "index").value_or(0);
      u.control_plane = GetBool(j, "control_plane").value_or(false);
      u.deleting = GetBool(j, "deleting").value_or(false);
      u.orphaned = GetBool(j, "orphaned").value_or(false);
      if (const json::array* svcs = GetArray(j, "svcs")) {
        for (const auto& sv : *svcs) {
          if (!sv.is_object()) continue;
          const json::object& s = sv.as_object();
          Svc x;
          x.type = static_cast<ResourceType>(GetInt(s, "type").value_or(0));
          x.id = str(s, "id");
          x.caller = str(s, "caller");
          x.state = ParseSvcState(str(s, "state"));
          x.fut_type = str(s, "fut_type");
          x.fut_token = str(s, "fut_token");
          x.fut_stored = !x.fut_type.empty();
          x.attempts = static_cast<int>(GetInt(s, "attempts").value_or(0));
          x.err_status = static_cast<int>(GetInt(s, "err_status").value_or(0));
          x.err_code = str(s, "err_code");
          x.err_message = str(s, "err_message");
          x.orphaned = GetBool(s, "orphaned").value_or(false);
          x.since = FromMs(GetInt(s, "since_ms").value_or(0));
          u.svcs.push_back(std::move(x));
        }
      }
      EnqueueLocked("u:" + u.key, now);
      units_[u.key] = std::move(u);
    }
  }
  // A reference to a unit that is not there would fail in a worker; it fails the start instead.
  for (const auto& [href, o] : objs_) {
    if (!o.cp_unit.empty() && !units_.count(o.cp_unit))
      return Error::Corruption("provisioning state: " + href + " names control plane " + o.cp_unit +
                               ", which does not exist");
    for (const auto& k : o.machines) {
      if (!units_.count(k))
        return Error::Corruption("provisioning state: " + href + " names machine " + k +
                                 ", which does not exist");
    }
  }
  return Status::Ok();
}

}  // namespace hcprp::provisioning
