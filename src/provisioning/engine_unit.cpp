// The per-service reconciler: one reconcile of a unit (a machine or a control plane) calls Azure for
// its services in order, stores futures, and records failures, backoff and orphaning.
#include <algorithm>

#include "provisioning/engine_internal.h"

namespace hcprp::provisioning {

void Engine::ReconcileUnit(const std::string& key) {
  Unit u;
  std::vector<Svc> original;  // the services as this reconcile found them
  TimePoint creds_since{};
  bool creds_invalid = false;
  {
    MutexLock lock(mu_);
    auto it = units_.find(key);
    if (it == units_.end()) return;
    u = it->second;
    original = u.svcs;
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
          // Orphaning: skip the cleanup the customer's identity can no longer do; the first-party
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
  // The unit's document as this reconcile leaves it, encoded before taking the lock; used below unless
  // another step changed the unit's other fields meanwhile. A reconcile that changed no service (a poll
  // of an operation still running) has nothing to encode.
  const bool svcs_changed = u.svcs != original || u.orphaned;
  std::string doc = options_.state && svcs_changed ? EncodeUnit(u) : std::string();
  MutexLock lock(mu_);
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
  // A reconcile that changed nothing (a poll of an operation still running) writes nothing.
  const bool unit_changed = it->second.svcs != u.svcs || (u.orphaned && !it->second.orphaned);
  it->second.svcs = std::move(u.svcs);
  if (u.orphaned && !it->second.orphaned) {
    it->second.orphaned = true;
    metrics_.orphaned_machines++;
    if (options_.logger) {
      options_.logger->Warn("skipping cleanup of a machine because of invalid Azure identity",
                            {{"machine", u.name}, {"node_pool", u.owner}});
    }
  }
  if (!unit_changed) {
    // Nothing to write.
  } else if (const Unit& now_u = it->second;
             options_.state && now_u.deleting == u.deleting && now_u.orphaned == u.orphaned &&
             now_u.owner == u.owner && now_u.cluster == u.cluster && now_u.name == u.name &&
             now_u.index == u.index && now_u.control_plane == u.control_plane) {
    dirty_units_[key] = std::move(doc);
  } else {
    TouchUnitLocked(key);
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
    if (creds_changed) dirty_objs_.insert(u.cluster);
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
                                                       [&](const std::string& k) HCPRP_REQUIRES(mu_) {
                                                         auto m = units_.find(k);
                                                         return m == units_.end() || m->second.Done();
                                                       });
    }
    EnqueueLocked("o:" + u.owner, finishes_owner ? now : now + Scaled(options_.rollup_interval));
  }
}

}  // namespace hcprp::provisioning
