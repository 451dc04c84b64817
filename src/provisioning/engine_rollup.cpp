// The condition roll-up: per service, machines and identity, from a node pool's or cluster's units.
#include <algorithm>
#include <map>

#include "core/time.h"
#include "provisioning/engine_internal.h"

namespace hcprp::provisioning {

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
    if (c.status == "False") {
      c.reason = obj.op == Operation::kDelete    ? "Deleting"
                 : obj.op == Operation::kUpgrade ? "Upgrading"
                                                 : "Creating";
    }
    if (obj.orphaned) c.message += "; " + std::to_string(obj.orphaned) + " orphaned (invalid Azure identity)";
    conds.push_back(std::move(c));
  }
  if (obj.kind == simulator::kCluster) {
    conds.push_back(obj.creds_valid ? Cond{"AzureIdentityValid", "True", "", ""}
                                    : Cond{"AzureIdentityValid", "False", obj.creds_reason,
                                           "The cluster's managed identity credentials are invalid: " +
                                               obj.creds_message});
  }
  if (obj.op == Operation::kUpgrade && !obj.version.empty()) {
    const bool ended =
        obj.cs_state == "ready" || obj.cs_state == "error" || obj.cs_state == "recoverable_error";
    std::string message;
    if (obj.kind == simulator::kNodePool) {
      int64_t at_version = 0;
      for (const Unit* u : units)
        at_version += (!u->deleting && u->Done() && u->version == obj.version) ? 1 : 0;
      message =
          std::to_string(at_version) + " of " + std::to_string(obj.desired) + " machines at " + obj.version;
    } else {
      message = (ended ? "control plane at " : "control plane upgrading to ") + obj.version;
    }
    if (ended && obj.cs_state != "ready") message = "upgrade to " + obj.version + " failed";
    conds.push_back(Cond{"Progressing", ended ? "False" : "True",
                         !ended                    ? "Upgrading"
                         : obj.cs_state == "ready" ? "UpgradeCompleted"
                                                   : "UpgradeFailed",
                         message});
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
  json::object ids;
  for (const std::string& id : obj.identities) {
    if (auto known = options_.azure->IdentityIds(id)) ids[ToLower(id)] = std::move(*known);
  }
  if (arr == obj.conditions && ids == obj.identity_ids) return;
  obj.conditions = std::move(arr);
  obj.identity_ids = std::move(ids);
  json::object fields{{"conditions", obj.conditions}};
  if (obj.kind == simulator::kCluster) fields["managed_identities"] = obj.identity_ids;
  out.push_back(Pending{obj.href, "", "", "", true, std::move(fields), ""});
}

}  // namespace hcprp::provisioning
