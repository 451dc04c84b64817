#include "clusterservice/event.h"

#include "clusterservice/convert.h"
#include "clusterservice/update_graph.h"
#include "core/time.h"

namespace hcprp::clusterservice {

namespace {

std::string StringOf(const json::object& o, std::string_view key) {
  return std::string(GetString(o, key).value_or(""));
}

std::optional<arm::ResourceId> ClusterResourceIdOf(const json::object& azure) {
  std::string sub = StringOf(azure, "subscription_id");
  std::string rg = StringOf(azure, "resource_group_name");
  std::string name = StringOf(azure, "resource_name");
  if (sub.empty() || rg.empty() || name.empty()) return std::nullopt;
  arm::ResourceId id;
  id.kind = arm::ResourceKind::kCluster;
  id.subscription_id = std::move(sub);
  id.resource_group = std::move(rg);
  id.cluster_name = std::move(name);
  return id;
}

}  // namespace

CsStatus ParseCsStatus(const json::object& status) {
  CsStatus out;
  auto it = status.find("state");
  if (it != status.end()) {
    if (it->value().is_string()) {
      out.state = std::string(it->value().as_string());
    } else if (it->value().is_object()) {
      out.state = StringOf(it->value().as_object(), "node_pool_state_value");
    }
  }
  out.provision_error_code = StringOf(status, "provision_error_code");
  out.provision_error_message = StringOf(status, "provision_error_message");
  if (out.provision_error_message.empty()) out.provision_error_message = StringOf(status, "message");
  if (const json::array* conditions = GetArray(status, "conditions")) out.conditions = *conditions;
  if (const json::array* history = GetArray(status, "version_history")) out.version_history = *history;
  if (const json::object* ids = GetObject(status, "managed_identities")) out.managed_identities = *ids;
  return out;
}

json::array ActiveVersions(const json::array& version_history) {
  json::array out;
  for (const json::value& v : version_history) {
    const json::object* entry = v.if_object();
    if (entry == nullptr) continue;
    auto version = GetString(*entry, "version");
    if (!version || version->empty()) continue;
    out.push_back(json::object{{"version", *version}});
    if (GetString(*entry, "state").value_or("") == "Completed") break;
  }
  return out;
}

json::object SyncedStatusFields(const CsStatus& status) {
  json::object out;
  if (status.conditions) out["conditions"] = *status.conditions;
  if (status.version_history) out["version_history"] = *status.version_history;
  if (status.managed_identities) out["managed_identities"] = *status.managed_identities;
  if (!status.state.empty()) {
    // A failure outside an operation of the resource provider (an automatic upgrade) shows only here.
    const bool failed = status.state == "error" || status.state == "recoverable_error";
    out["provision_error"] = failed ? json::value(json::object{{"code", status.provision_error_code},
                                                               {"message", status.provision_error_message}})
                                    : json::value(nullptr);
  }
  return out;
}

ServiceObject ParseServiceObject(const json::object& object) {
  ServiceObject out;
  out.href = StringOf(object, "href");
  out.name = StringOf(object, "name");
  if (const json::object* azure = GetObject(object, "azure")) {
    out.azure_resource_name = StringOf(*azure, "resource_name");
    out.subscription_id = StringOf(*azure, "subscription_id");
    out.cluster_resource_id = ClusterResourceIdOf(*azure);
  }
  if (auto created = ParseRfc3339(GetString(object, "creation_timestamp").value_or("")); created.ok())
    out.created = *created;
  if (const json::object* status = GetObject(object, "status")) out.status = ParseCsStatus(*status);
  if (out.status.provision_error_code.empty()) {
    CsStatus top = ParseCsStatus(object);
    out.status.provision_error_code = std::move(top.provision_error_code);
    if (out.status.provision_error_message.empty())
      out.status.provision_error_message = std::move(top.provision_error_message);
  }
  out.assigned = ClusterReadOnlyFromCs(object);
  if (const json::object* version = GetObject(object, "version")) {
    out.desired_version = RawVersionOf(StringOf(*version, "id"));
    out.channel_group = StringOf(*version, "channel_group");
  }
  if (out.channel_group.empty()) out.channel_group = "stable";
  return out;
}

Event ParseEvent(const json::object& item) {
  Event e;
  e.sequence = static_cast<uint64_t>(GetInt(item, "sequence").value_or(0));
  e.href = StringOf(item, "href");
  e.kind = StringOf(item, "kind");
  e.state = StringOf(item, "state");
  if (const json::object* object = GetObject(item, "object")) e.object = ParseServiceObject(*object);
  e.object.href = e.href;  // the stream names the object that changed
  return e;
}

EventPage ParseEventPage(const json::object& page) {
  EventPage out;
  out.last_sequence = static_cast<uint64_t>(GetInt(page, "last_sequence").value_or(0));
  if (const json::array* items = GetArray(page, "items")) {
    for (const json::value& v : *items) {
      if (const json::object* item = v.if_object()) out.events.push_back(ParseEvent(*item));
    }
  }
  return out;
}

}  // namespace hcprp::clusterservice
