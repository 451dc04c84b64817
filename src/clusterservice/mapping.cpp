#include "clusterservice/mapping.h"

#include "api/experimental.h"
#include "clusterservice/client.h"
#include "clusterservice/convert.h"

namespace hcprp::clusterservice {

std::string ClusterServiceCollection(arm::ResourceKind kind, std::string_view parent_internal_id) {
  switch (kind) {
    case arm::ResourceKind::kCluster:
      return std::string(kApiPrefix) + "/clusters";
    case arm::ResourceKind::kNodePool:
      return std::string(parent_internal_id) + "/node_pools";
    case arm::ResourceKind::kExternalAuth:
      return std::string(parent_internal_id) + "/external_auth_configs";
  }
  return "";
}

std::string SearchLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::string SearchForResource(const arm::ResourceId& id) {
  if (id.kind != arm::ResourceKind::kCluster) return "name = " + SearchLiteral(id.child_name);
  return "azure.subscription_id = " + SearchLiteral(id.subscription_id) +
         " and azure.resource_group_name = " + SearchLiteral(id.resource_group) +
         " and azure.resource_name = " + SearchLiteral(id.cluster_name);
}

namespace {

// The cluster's properties as the Cluster Service runs them: version.id is the exact version when an
// experimental pin set one (api/experimental.h).
json::object ClusterPropertiesToRun(const api::Resource& resource) {
  json::object p = resource.properties;
  auto exact = GetString(resource.experimental, api::kControlPlaneExactVersion);
  if (!exact) return p;
  json::object version;
  if (const json::object* v = GetObject(p, "version")) version = *v;
  version["id"] = *exact;
  p["version"] = std::move(version);
  return p;
}

// A cluster create body: the conversion plus the experimental features' properties.
Result<json::object> ClusterCreateBody(const api::Resource& resource, const AzureContext& azure) {
  HCPRP_ASSIGN_OR_RETURN(json::object body, ClusterToCs(ClusterPropertiesToRun(resource), azure));
  json::object properties = ExperimentalPropertiesToCs(resource.experimental);
  if (!properties.empty()) body["properties"] = std::move(properties);
  return body;
}

}  // namespace

Result<json::object> BuildClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource,
                                                   std::string_view tenant_id) {
  AzureContext azure;
  azure.resource_id = id.ToString();
  switch (id.kind) {
    case arm::ResourceKind::kCluster:
      azure.location = resource.location;
      azure.tenant_id = std::string(tenant_id);
      if (resource.identity) azure.identity = *resource.identity;
      return ClusterCreateBody(resource, azure);
    case arm::ResourceKind::kNodePool:
      return NodePoolToCs(resource.properties, azure);
    case arm::ResourceKind::kExternalAuth:
      return ExternalAuthToCs(resource.properties, azure);
  }
  return Error::InvalidArgument("unknown resource kind");
}

json::object ClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource,
                                      std::string_view tenant_id) {
  auto body = BuildClusterServiceCreateBody(id, resource, tenant_id);
  if (!body.ok()) return {};
  return std::move(body).value();
}

json::object ClusterServiceUpdateBody(const arm::ResourceId& id, const api::Resource& resource) {
  auto patch = [&]() -> Result<json::object> {
    switch (id.kind) {
      case arm::ResourceKind::kCluster: {
        HCPRP_ASSIGN_OR_RETURN(json::object body, ClusterPatchToCs(ClusterPropertiesToRun(resource)));
        body["properties"] = ExperimentalPropertiesToCs(resource.experimental);
        return body;
      }
      case arm::ResourceKind::kNodePool:
        return NodePoolPatchToCs(resource.properties);
      case arm::ResourceKind::kExternalAuth:
        return ExternalAuthPatchToCs(resource.properties);
    }
    return json::object();
  }();
  if (!patch.ok()) return {};
  return std::move(patch).value();
}

namespace {

// A release ID held for a requested one: the same, or a release of the requested minor.
bool VersionIdHolds(std::string_view held, std::string_view asked) {
  if (held == asked) return true;
  const size_t first = asked.find('.');
  const bool minor_only =
      first != std::string_view::npos && asked.find('.', first + 1) == std::string_view::npos;
  return minor_only && held.size() > asked.size() && held.substr(0, asked.size()) == asked &&
         held[asked.size()] == '.';
}

bool Holds(const json::object& object, const json::object& patch, bool top) {
  for (const auto& [key, asked] : patch) {
    const json::value* held = object.if_contains(key);
    if (asked.is_null()) {
      if (held != nullptr && !held->is_null()) return false;
      continue;
    }
    if (top && key == "properties" && asked.is_object()) {
      const bool none = held == nullptr || (held->is_object() && held->get_object().empty());
      if (asked.get_object().empty() ? !none : (held == nullptr || *held != asked)) return false;
      continue;
    }
    if (held == nullptr) return false;
    if (top && key == "version" && asked.is_object() && held->is_object()) {
      json::object rest = asked.get_object();
      const json::value* id = rest.if_contains("id");
      const json::value* held_id = held->get_object().if_contains("id");
      if (id != nullptr && id->is_string()) {
        if (held_id == nullptr || !held_id->is_string() ||
            !VersionIdHolds(held_id->get_string(), id->get_string()))
          return false;
        rest.erase("id");
      }
      if (!Holds(held->get_object(), rest, false)) return false;
      continue;
    }
    if (asked.is_object()) {
      if (!held->is_object() || !Holds(held->get_object(), asked.get_object(), false)) return false;
      continue;
    }
    if (*held != asked) return false;
  }
  return true;
}

}  // namespace

bool ObjectHoldsUpdate(const json::object& object, const json::object& patch) {
  return Holds(object, patch, true);
}

json::object ObservedFromClusterService(arm::ResourceKind kind, const json::object& cs_object) {
  if (kind != arm::ResourceKind::kCluster) return {};
  return ClusterReadOnlyFromCs(cs_object);
}

json::object ObservedFromClusterService(arm::ResourceKind kind, const ServiceObject& object) {
  if (kind != arm::ResourceKind::kCluster) return {};
  return object.assigned;
}

Result<CreateRequest> CreateRequestFor(const arm::ResourceDocument& doc, std::string_view parent_internal_id,
                                       std::string_view tenant_id) {
  HCPRP_ASSIGN_OR_RETURN(arm::ResourceId id, arm::ParseResourceId(doc.resource_id));
  if (id.kind != arm::ResourceKind::kCluster && parent_internal_id.empty()) {
    return Error::Unavailable("the parent cluster has no internal ID yet");
  }
  HCPRP_ASSIGN_OR_RETURN(api::Resource model, api::FromStorage(doc.resource));
  CreateRequest req;
  req.collection_href = ClusterServiceCollection(id.kind, parent_internal_id);
  HCPRP_ASSIGN_OR_RETURN(req.body, BuildClusterServiceCreateBody(id, model, tenant_id));
  return req;
}

Result<json::object> UpdateRequestFor(const arm::ResourceDocument& doc) {
  HCPRP_ASSIGN_OR_RETURN(arm::ResourceId id, arm::ParseResourceId(doc.resource_id));
  HCPRP_ASSIGN_OR_RETURN(api::Resource model, api::FromStorage(doc.resource));
  return ClusterServiceUpdateBody(id, model);
}

}  // namespace hcprp::clusterservice
