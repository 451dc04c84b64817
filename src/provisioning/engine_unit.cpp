// The per-service reconciler: one reconcile of a unit (a machine or a control plane) reads the unit,
// calls Azure for its services as the pure steps of unit_step.h plan, and commits what they leave:
// the services, the cluster's credentials, the engine's metrics and what to run next.
#include <algorithm>

#include "provisioning/engine_internal.h"
#include "provisioning/unit_step.h"

namespace hcprp::provisioning {

namespace {

// Makes the call `request` plans for `s`. A poll whose operation Azure no longer knows (its answer was
// already read, e.g. before a restart) becomes a PUT or DELETE, which adopts a running operation or
// answers the resource as it is instead of starting another.
AzureCall CallAzure(SimulatedAzure& az, const UnitService& s, const AzureRequest& request) {
  const bool deleting = request.kind == AzureOpKind::kDelete;
  if (request.poll_token) {
    AzureCall r = az.Poll(s.caller, *request.poll_token);
    if (r.outcome != AzureCall::Outcome::kFailed || r.http_status != 404) return r;
  }
  return deleting ? az.BeginDelete(s.caller, s.id) : az.BeginCreate(s.caller, s.type, s.id);
}

}  // namespace

void Engine::ReconcileUnit(const std::string& key) {
  const StepContext context{options_.clock->Now(), Scaled(options_.client_timeout),
                            Scaled(options_.orphan_threshold), Scaled(options_.backoff_base),
                            Scaled(options_.backoff_max)};
  std::optional<UnitPass> pass = BeginUnitPass(key);
  if (!pass) return;
  const std::vector<UnitService> original = pass->unit.svcs;  // the services as this reconcile found them
  SimulatedAzure& az = *options_.azure;
  for (size_t guard = 0; guard < original.size() * 3 + 3; ++guard) {
    const std::optional<size_t> index = NextService(pass->unit);
    if (!index) break;
    const UnitService& s = pass->unit.svcs[*index];
    const AzureRequest request = PlanCall(s, pass->unit.deleting);
    AfterCommit(CallPoint(pass->unit, s));
    const AzureCall answer = CallAzure(az, s, request);
    StepEffects effects = StepService(*pass, *index, request, answer, options_.clock->Now(), context);
    for (auto& point : effects.points) AfterCommit(std::move(point));
    if (!ApplyStep(*index, std::move(effects), context.now, &*pass)) break;
  }
  CommitUnitPass(key, original, std::move(*pass), context.now);
}

std::optional<UnitPass> Engine::BeginUnitPass(const std::string& key) {
  MutexLock lock(mu_);
  auto it = units_.find(key);
  if (it == units_.end()) return std::nullopt;
  UnitPass pass;
  pass.unit = it->second;
  auto c = objs_.find(pass.unit.cluster);
  if (c != objs_.end() && !c->second.creds_valid) {
    pass.creds_invalid = true;
    pass.creds_invalid_since = c->second.creds_invalid_since;
  }
  metrics_.reconciles++;
  return pass;
}

void Engine::CommitUnitPass(const std::string& key, const std::vector<UnitService>& original, UnitPass pass,
                            TimePoint now) {
  Unit& u = pass.unit;
  const bool shown_changed = ShownStateChanged(original, u);
  // The unit's document as this reconcile leaves it, encoded before taking the lock; used unless
  // another step changed the unit's other fields meanwhile. A reconcile that changed no service (a poll
  // of an operation still running) has nothing to encode.
  const bool svcs_changed = u.svcs != original || u.orphaned;
  std::string doc = options_.state && svcs_changed ? EncodeUnit(u) : std::string();
  MutexLock lock(mu_);
  metrics_ += pass.counts;
  auto it = units_.find(key);
  if (it == units_.end()) return;
  StoreUnitLocked(key, u, std::move(doc), it->second);
  if (pass.counts.orphaned_control_planes > 0 && options_.logger) {
    options_.logger->Warn("skipping cleanup of the control plane because of invalid Azure identity",
                          {{"cluster", u.cluster}});
  }
  const bool creds_changed = CommitCredentialsLocked(pass, now);
  if (pass.next) EnqueueLocked("u:" + key, *pass.next);
  if (shown_changed || creds_changed) EnqueueRollUpLocked(it->second, u.owner, creds_changed, now);
}

void Engine::StoreUnitLocked(const std::string& key, Unit& u, std::string doc, Unit& stored) {
  // A reconcile that changed nothing (a poll of an operation still running) writes nothing.
  const bool newly_orphaned = u.orphaned && !stored.orphaned;
  const bool unit_changed = stored.svcs != u.svcs || newly_orphaned;
  stored.svcs = std::move(u.svcs);
  if (newly_orphaned) {
    stored.orphaned = true;
    metrics_.orphaned_machines++;
    if (options_.logger) {
      options_.logger->Warn("skipping cleanup of a machine because of invalid Azure identity",
                            {{"machine", u.name}, {"node_pool", u.owner}});
    }
  }
  if (!unit_changed) return;
  // The document encoded outside the lock holds unless another step changed the unit meanwhile.
  if (options_.state && stored.deleting == u.deleting && stored.orphaned == u.orphaned &&
      stored.owner == u.owner && stored.cluster == u.cluster && stored.name == u.name &&
      stored.index == u.index && stored.control_plane == u.control_plane && stored.version == u.version) {
    dirty_units_[key] = std::move(doc);
  } else {
    TouchUnitLocked(key);
  }
}

bool Engine::CommitCredentialsLocked(const UnitPass& pass, TimePoint now) {
  const Unit& unit = pass.unit;
  auto c = objs_.find(unit.cluster);
  if (c == objs_.end()) return false;
  Obj& cl = c->second;
  const CredentialSighting& seen = pass.creds_seen;
  bool changed = false;
  if (seen.kind == CredentialSighting::Kind::kInvalid) {
    if (cl.creds_valid) {
      cl.creds_valid = false;
      cl.creds_invalid_since = pass.creds_invalid_since;
      changed = true;
    }
    changed = changed || cl.creds_reason != seen.reason;
    cl.creds_reason = seen.reason;
    cl.creds_message = seen.message;
  } else if (seen.kind == CredentialSighting::Kind::kValid && !cl.creds_valid) {
    cl.creds_valid = true;
    cl.creds_reason.clear();
    cl.creds_message.clear();
    changed = true;
  }
  if (!changed) return false;
  dirty_objs_.insert(unit.cluster);
  // The cluster's AzureIdentityValid condition follows what its machines see.
  if (unit.cluster != unit.owner) EnqueueLocked("o:" + unit.cluster, now);
  return true;
}

void Engine::EnqueueRollUpLocked(const Unit& unit, const std::string& owner, bool creds_changed,
                                 TimePoint now) {
  // The last machine of a node pool to finish finishes the pool: roll up now. Progress only changes
  // conditions, which many machines' progress share.
  bool finishes_owner = creds_changed || unit.control_plane;
  if (!finishes_owner && unit.Done()) {
    auto o = objs_.find(owner);
    finishes_owner = o == objs_.end() || std::all_of(o->second.machines.begin(), o->second.machines.end(),
                                                     [&](const std::string& k) HCPRP_REQUIRES(mu_) {
                                                       auto m = units_.find(k);
                                                       return m == units_.end() || m->second.Done();
                                                     });
  }
  EnqueueLocked("o:" + owner, finishes_owner ? now : now + Scaled(options_.rollup_interval));
}

}  // namespace hcprp::provisioning
