#include "provisioning/engine.h"

#include <algorithm>

#include "core/time.h"
#include "core/uuid.h"
#include "provisioning/crash_point.h"
#include "provisioning/engine_internal.h"

namespace hcprp::provisioning {

namespace {

// Set while the engine itself calls the sink, so that Next() recognises its own moves.
thread_local bool t_engine_transition = false;

std::string KindOf(std::string_view href) {
  if (href.find("/node_pools/") != std::string_view::npos) return "nodepool";
  if (href.find("/external_auth_configs/") != std::string_view::npos) return "externalauth";
  return "cluster";
}

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

EngineMetrics& EngineMetrics::operator+=(const EngineMetrics& other) {
  reconciles += other.reconciles;
  calls += other.calls;
  futures_stored += other.futures_stored;
  completed_within_timeout += other.completed_within_timeout;
  throttled += other.throttled;
  failures += other.failures;
  credential_failures += other.credential_failures;
  orphaned_machines += other.orphaned_machines;
  orphaned_control_planes += other.orphaned_control_planes;
  first_party_group_deletions += other.first_party_group_deletions;
  transitions += other.transitions;
  return *this;
}

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

Duration Engine::CredentialIssueTime() { return Scaled(options_.credential_issue_time); }
Duration Engine::RevocationTime() { return Scaled(options_.revocation_time); }

std::optional<simulator::Step> Engine::Next(const simulator::ObjectInfo& info) {
  if (t_engine_transition) return std::nullopt;
  // Break-glass credentials need nothing in Azure: the simulator runs them on its own.
  if (info.kind != simulator::kCluster && info.kind != simulator::kNodePool &&
      info.kind != simulator::kExternalAuth) {
    return std::nullopt;
  }
  const std::string href(info.href);
  MutexLock lock(mu_);
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
  o.version = std::string(info.version);
  if (info.operation == Operation::kUpgrade && info.operation_id != o.upgrade_op) {
    o.upgrade_op = info.operation_id;  // a new upgrade, not the same one announced again after a restart
    o.upgrade_due = TimePoint{};
  }
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
    auto add_identity = [&o](std::string_view id) {  // one the cluster names, once
      if (std::find(o.identities.begin(), o.identities.end(), id) == o.identities.end())
        o.identities.emplace_back(id);
    };
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
          if (group == "control_plane_operators_managed_identities") add_identity(*id);
          if (group == "control_plane_operators_managed_identities" &&
              (capz.empty() || k == "cluster-api-azure")) {
            capz = std::string(*id);
          }
        }
      }
      if (const json::object* smi = GetObject(*mi, "service_managed_identity")) {
        if (auto id = GetString(*smi, "resource_id")) {
          az_sim.EnsureCustomerResource(ResourceType::kManagedIdentity, std::string(*id));
          add_identity(*id);
          if (capz.empty()) capz = std::string(*id);
        }
      }
    }
    // A cluster without customer identities is provisioned by the first-party identity alone.
    if (o.caller.empty() || info.operation == Operation::kCreate)
      o.caller = capz.empty() ? std::string(kFirstParty) : capz;
  } else if (info.kind == simulator::kNodePool) {
    o.desired = simulator::NodePoolReplicas(obj);
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
      MutexLock lock(mu_);
      EnqueueLocked(p.enqueue, options_.clock->Now());
      continue;
    }
    if (!sink_) continue;
    if (p.conditions) {
      sink_->PublishStatus(p.href, p.fields);
      continue;
    }
    if (CrashPointsArmed()) CrashPoint("transition." + KindOf(p.href) + "." + p.state);
    t_engine_transition = true;
    Status st = sink_->Transition(p.href, p.state, p.code, p.message);
    t_engine_transition = false;
    if (!st.ok() && p.state == simulator::kGone && st.error().Is(ErrorCode::kConflict)) {
      // A cluster whose children's removals, applied by other workers, have not all reached the
      // Cluster Service yet: its removal is tried again shortly ("g:" keys, RunKey).
      MutexLock lock(mu_);
      EnqueueLocked("g:" + p.href, options_.clock->Now() + kRemovalRetry);
      continue;
    }
    if (!st.ok() && options_.logger) {
      options_.logger->Warn("cannot move an object",
                            {{"href", p.href}, {"state", p.state}, {"error", st.error().ToString()}});
    }
  }
  out.clear();
}

Unit Engine::MakeControlPlaneLocked(const Obj& cluster) {
  Unit u;
  u.key = cluster.href + "#controlplane";
  u.owner = cluster.href;
  u.cluster = cluster.href;
  u.name = "controlplane";
  u.control_plane = true;
  const std::string p = cluster.mrg_id + "/providers/";
  u.svcs.push_back(UnitService{ResourceType::kResourceGroup, cluster.mrg_id, std::string(kFirstParty)});
  u.svcs.push_back(UnitService{ResourceType::kPublicIp,
                               p + "Microsoft.Network/publicIPAddresses/kube-apiserver-pip", cluster.caller});
  u.svcs.push_back(UnitService{ResourceType::kLoadBalancer,
                               p + "Microsoft.Network/loadBalancers/kube-apiserver", cluster.caller});
  u.svcs.push_back(UnitService{
      ResourceType::kRoleAssignment,
      p + "Microsoft.Authorization/roleAssignments/" + UuidV5(kRoleNamespace, cluster.href + "#cp"),
      cluster.caller});
  return u;
}

Unit Engine::MakeMachineLocked(const Obj& pool, const Obj& cluster, int64_t index) {
  Unit u;
  u.name = pool.name + "-" + std::to_string(index);
  u.key = pool.href + "#" + u.name;
  u.owner = pool.href;
  u.cluster = cluster.href;
  u.index = index;
  u.version = pool.version;
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
    u.svcs.push_back(UnitService{t, id, cluster.caller});
  }
  return u;
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

bool Engine::UpgradePhaseOverLocked(Obj& obj) {
  const TimePoint now = options_.clock->Now();
  if (obj.upgrade_due == TimePoint{}) {
    obj.upgrade_due = now + (options_.control_plane_upgrade_time ? options_.control_plane_upgrade_time()
                                                                 : Duration::zero());
    AfterCommit("upgrade.start");
  }
  if (now >= obj.upgrade_due) return true;
  EnqueueLocked("o:" + obj.href, obj.upgrade_due);
  return false;
}

void Engine::AddMachineLocked(Obj& pool, const Obj& cluster) {
  Unit u = MakeMachineLocked(pool, cluster, pool.next_index++);
  const std::string k = u.key;
  units_[k] = std::move(u);
  TouchUnitLocked(k);
  pool.machines.push_back(k);
  EnqueueLocked("u:" + k, options_.clock->Now());
}

void Engine::RetireMachineLocked(const std::string& key) {
  Unit& u = units_.at(key);
  u.deleting = true;
  TouchUnitLocked(key);
  EnqueueLocked("u:" + key, options_.clock->Now());
}

bool Engine::ScaleLocked(Obj& pool, const Obj& cluster) {
  std::vector<size_t> active;  // indexes into pool.machines
  for (size_t i = 0; i < pool.machines.size(); ++i) {
    if (!units_.at(pool.machines[i]).deleting) active.push_back(i);
  }
  while (static_cast<int64_t>(active.size()) < pool.desired) {
    AddMachineLocked(pool, cluster);
    active.push_back(pool.machines.size() - 1);
    if (pool.cs_state == "updating") AfterCommit("scale.up");
  }
  while (static_cast<int64_t>(active.size()) > pool.desired) {
    RetireMachineLocked(pool.machines[active.back()]);
    active.pop_back();
    AfterCommit("scale.down");
  }
  return active.size() == pool.machines.size();
}

bool Engine::RollLocked(Obj& pool, const Obj& cluster) {
  std::vector<RollMachine> machines;
  for (const auto& k : pool.machines) {
    const Unit& u = units_.at(k);
    machines.push_back(RollMachine{u.version, u.deleting, u.Done()});
  }
  const RollStep step = PlanRoll(machines, pool.desired, pool.version);
  switch (step.action) {
    case RollAction::kDone:
      return true;
    case RollAction::kWait:
      return false;
    case RollAction::kSurge:
      AddMachineLocked(pool, cluster);
      AfterCommit("upgrade.surge");
      return false;
    case RollAction::kRetire:
      RetireMachineLocked(pool.machines[step.retire]);
      AfterCommit("upgrade.retire");
      return false;
  }
  return false;
}

void Engine::FailUpgradeLocked(Obj& pool, std::vector<Pending>& out) {
  if (UpgradePhaseOverLocked(pool)) MoveLocked(pool, pool.failure_state, out);
  RollUpLocked(pool, out);
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
        TouchUnitLocked(u.key);
        EnqueueLocked("u:" + u.key, now);
      }
      RollUpLocked(obj, out);
      if (!u.Done()) return;
      TouchUnitLocked(obj.cp_unit);
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
    TouchUnitLocked(obj.cp_unit);
    EnqueueLocked("u:" + obj.cp_unit, now);
  }
  RollUpLocked(obj, out);
  const Unit& u = units_.at(obj.cp_unit);
  std::string code, message;
  if (u.Done()) {
    if (obj.op == Operation::kUpgrade && !UpgradePhaseOverLocked(obj)) return;
    const std::string target = obj.failure_state.empty() ? "ready" : obj.failure_state;
    MoveLocked(obj, target, out);
    if (obj.op == Operation::kUpgrade) RollUpLocked(obj, out);  // Progressing ends
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
    MoveLocked(obj, obj.op == Operation::kCreate ? "installing" : "updating", out);
  }
}

void Engine::ReconcilePoolLocked(Obj& obj, std::vector<Pending>& out) {
  const TimePoint now = options_.clock->Now();
  auto remove_finished = [&]() HCPRP_REQUIRES(mu_) {
    std::erase_if(obj.machines, [&](const std::string& k) HCPRP_REQUIRES(mu_) {
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
      TouchUnitLocked(it->first);
      units_.erase(it);
      return true;
    });
  };
  if (obj.op == Operation::kDelete) {
    for (const auto& k : obj.machines) {
      Unit& u = units_.at(k);
      if (!u.deleting) {
        u.deleting = true;
        TouchUnitLocked(k);
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
  const bool upgrade = obj.op == Operation::kUpgrade;
  if (upgrade && !obj.failure_state.empty()) return FailUpgradeLocked(obj, out);
  remove_finished();
  // An upgrade replaces the machines at other versions first; then the pool scales as usual.
  const bool rolling = upgrade && !RollLocked(obj, cluster);
  const bool scaled = !rolling && ScaleLocked(obj, cluster);
  RollUpLocked(obj, out);
  bool all_ready = scaled;
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
  if (upgrade) RollUpLocked(obj, out);  // Progressing follows the state
}

json::array Engine::Conditions(const std::string& href) const {
  MutexLock lock(mu_);
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
    if (s.pending && s.pending->stored) {
      futures.push_back(json::object{{"type", AzureOpKindName(s.pending->kind)},
                                     {"serviceName", ShortName(s.type)},
                                     {"name", s.id},
                                     {"data", s.pending->token}});
    }
  }
  return json::object{{"name", u.name},
                      {"version", u.version},
                      {"deleting", u.deleting},
                      {"orphaned", u.orphaned},
                      {"services", std::move(svcs)},
                      {"longRunningOperationStates", std::move(futures)}};
}

Result<json::object> Engine::ClusterView(const std::string& cluster_href) const {
  MutexLock lock(mu_);
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
  MutexLock lock(mu_);
  return metrics_;
}

size_t Engine::object_count() const {
  MutexLock lock(mu_);
  return objs_.size();
}

size_t Engine::machine_count() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [k, u] : units_) n += u.control_plane ? 0 : 1;
  return n;
}

}  // namespace hcprp::provisioning
