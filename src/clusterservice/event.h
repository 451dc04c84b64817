// What the resource provider reads of Cluster Service objects and of their event stream, as types.
// The JSON of an object or event is parsed here, once, where it enters (HttpClient, the fake); the
// backend works on these types and never reads a Cluster Service field by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arm/resource_id.h"
#include "core/clock.h"
#include "core/json.h"

namespace hcprp::clusterservice {

// A Cluster Service status: from GET {href}/status, or an object's "status" member.
struct CsStatus {
  std::string state;  // "installing", "ready", ...; empty when absent
  std::string provision_error_code;
  std::string provision_error_message;
  // status.conditions when it is an array: copied as they are into the resource (never read here).
  std::optional<json::array> conditions;
  // status.version_history when it is an array: the versions the object ran and runs, newest first,
  // each {"version": "4.20.12", "state": "Completed" | "Partial", ...}; copied into the resource.
  std::optional<json::array> version_history;
  // status.managed_identities when it is an object: {lower-cased identity resource ID: {client_id,
  // principal_id}} for the identities the managed-identity service could read; copied into the resource.
  std::optional<json::object> managed_identities;
};
// status.activeVersions from a status.version_history: [{"version": V}] newest first, down to and
// including the first "Completed" entry; entries without a version are skipped.
json::array ActiveVersions(const json::array& version_history);

// The status fields the resource provider keeps in a resource document for rendering (conditions,
// version_history, managed_identities, and provision_error: {code, message} while the object is in an
// error state, else null), as an object of those present; empty when none is.
json::object SyncedStatusFields(const CsStatus& status);
// Accepts {"state": "ready", ...} and the real service's node pool shape
// {"state": {"node_pool_state_value": "ready"}, "message": ...}.
CsStatus ParseCsStatus(const json::object& status);

// A cluster, node pool or external auth object (listed, or from an event).
struct ServiceObject {
  std::string href;
  std::string name;                 // "name"
  std::string azure_resource_name;  // azure.resource_name; empty when absent
  // The ARM ID of the cluster named by azure.{subscription_id, resource_group_name, resource_name};
  // nullopt unless all three are there and non-empty (only clusters carry them).
  std::optional<arm::ResourceId> cluster_resource_id;
  std::optional<TimePoint> created;  // creation_timestamp, when it parses
  // "status" (empty when absent), where it has no provision error with the top level's (older
  // services report it there).
  CsStatus status;
  // The read-only values the service assigned, in ARM shape (ClusterReadOnlyFromCs); only a
  // cluster has any.
  json::object assigned;
  // version.id as the Cluster Service holds it, raw ("4.20.12"; empty when absent), and
  // version.channel_group ("stable" when absent); only a cluster's are read by the backend.
  std::string desired_version;
  std::string channel_group;
  std::string subscription_id;  // azure.subscription_id; empty when absent

  // The name of the ARM resource the object was made for: azure.resource_name, else its name.
  std::string_view ArmName() const { return azure_resource_name.empty() ? name : azure_resource_name; }
};
ServiceObject ParseServiceObject(const json::object& object);

inline constexpr std::string_view kDeletedState = "deleted";
// Events of the update service rather than of an object: a release published ("Version") and an
// upgrade edge withdrawn or restored ("UpgradeEdge").
inline constexpr std::string_view kVersionEventKind = "Version";
inline constexpr std::string_view kUpgradeEdgeEventKind = "UpgradeEdge";

// One state change of a Cluster Service object, from its event stream.
struct Event {
  uint64_t sequence = 0;  // strictly increasing
  std::string href;       // the object that changed
  std::string kind;       // "Cluster", "NodePool", "ExternalAuth"
  std::string state;      // new state ("installing", "ready", ...); kDeletedState when gone
  ServiceObject object;   // the object after the change (only its href when deleted)

  bool Deleted() const { return state == kDeletedState; }
};
// One item of the stream: {"sequence", "href", "kind", "state", "object"}.
Event ParseEvent(const json::object& item);

// Pass as `after` to WatchEvents to learn the current last_sequence without receiving events.
inline constexpr uint64_t kLatestEvents = UINT64_MAX;

struct EventPage {
  std::vector<Event> events;
  uint64_t last_sequence = 0;  // pass back as `after` to continue
};
// A page of the stream: {"items": [...], "last_sequence"}.
EventPage ParseEventPage(const json::object& page);

}  // namespace hcprp::clusterservice
