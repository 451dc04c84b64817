// What the provisioning engine's source files share: its private records (objects, pending transitions,
// commit batches; the units' are in unit.h) and small helpers. Private to the engine (engine.h is its
// interface).
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time.h"
#include "provisioning/engine.h"
#include "provisioning/unit.h"

namespace hcprp::provisioning {

using simulator::Operation;

inline std::string LastSegment(std::string_view href) {
  size_t p = href.rfind('/');
  return std::string(p == std::string_view::npos ? href : href.substr(p + 1));
}

// The cluster's href of a child's href, or "" for a cluster.
inline std::string ParentOf(std::string_view href) {
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

// How soon a cluster's removal the Cluster Service refused (its children not all gone yet) is tried again
// (real time, not scaled).
constexpr Duration kRemovalRetry = std::chrono::milliseconds(50);

// The services of a machine, in creation order.
constexpr ResourceType kMachineServices[] = {ResourceType::kPublicIp,       ResourceType::kNetworkInterface,
                                             ResourceType::kDisk,           ResourceType::kVirtualMachine,
                                             ResourceType::kRoleAssignment, ResourceType::kVmExtension};

// Crash points reached once the step this thread runs is committed (see crash_point.h): AfterCommit
// during the step, TakeStepPoints when it ends.
void AfterCommit(std::string name);
std::vector<std::string> TakeStepPoints();

// Unit steps are committed in groups by the committer thread: when this many objects and units are
// dirty, or this long after the first step of the group, or with the next step that moves an object in
// the Cluster Service.
constexpr size_t kGroupCommitSize = 1024;
constexpr auto kGroupCommitInterval = std::chrono::milliseconds(20);

struct Engine::Obj {
  std::string href, kind, cluster, name;
  Operation op = Operation::kCreate;
  std::string cs_state;
  std::string failure_state;
  int64_t desired = 0;
  // Clusters and node pools: the raw version the current create or upgrade installs, or the one the
  // object runs (simulator::ObjectInfo::version).
  std::string version;
  // The upgrade the phase below belongs to (ObjectInfo::operation_id), and when that phase ends: a
  // cluster's control plane upgrade, or an upgrade made to fail (nothing is replaced before it does).
  uint64_t upgrade_op = 0;
  TimePoint upgrade_due{};
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
  // Clusters: the user-assigned identities it names (control plane operators, service managed
  // identity), and what the managed-identity service last told of them (status.managed_identities:
  // lower-cased resource ID -> {client_id, principal_id}, absent for one it cannot read). Not persisted:
  // the next roll-up reads them again.
  std::vector<std::string> identities;
  json::object identity_ids;
  TimePoint validated_at{};  // when validating ends (not persisted: a restart validates again)
  // Loaded from the state but not announced by the Cluster Service after a restart: it no longer has
  // the object, so the engine deletes what is left in Azure and tells it nothing (not persisted).
  bool unknown = false;
};

struct Engine::Pending {
  std::string href, state, code, message;
  bool conditions = false;
  json::object fields;  // the status fields to publish (conditions, managed_identities) when `conditions`
  std::string enqueue;  // a key to queue once the transitions before it are applied
};

struct Engine::Batch {
  uint64_t ticket = 0;  // 0: nothing to write (no state)
  std::vector<Obj> objs;
  std::vector<std::string> removed_objs;
  std::vector<std::pair<std::string, std::string>> units;  // key, document
  std::vector<std::string> removed_units;
  AzureChanges azure;               // encoded by whoever writes the batch
  std::vector<std::string> points;  // crash points reached once it is written
  Status written = Status::Ok();    // set by whoever wrote it
};

}  // namespace hcprp::provisioning
