#include "frontend/cs_mapping.h"

#include "clusterservice/client.h"

namespace hcprp::frontend {

std::string ClusterServiceCollection(arm::ResourceKind kind, std::string_view parent_internal_id) {
  switch (kind) {
    case arm::ResourceKind::kCluster:
      return std::string(clusterservice::kApiPrefix) + "/clusters";
    case arm::ResourceKind::kNodePool:
      return std::string(parent_internal_id) + "/node_pools";
    case arm::ResourceKind::kExternalAuth:
      return std::string(parent_internal_id) + "/external_auth_configs";
  }
  return "";
}

namespace {
std::string_view CsKind(arm::ResourceKind kind) {
  switch (kind) {
    case arm::ResourceKind::kCluster:
      return "Cluster";
    case arm::ResourceKind::kNodePool:
      return "NodePool";
    case arm::ResourceKind::kExternalAuth:
      return "ExternalAuth";
  }
  return "";
}
}  // namespace

json::object ClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource) {
  json::object body;
  body["kind"] = CsKind(id.kind);
  body["name"] = id.Name();
  json::object azure;
  azure["subscription_id"] = ToLower(id.subscription_id);
  azure["resource_group_name"] = id.resource_group;
  azure["resource_name"] = id.Name();
  azure["resource_id"] = id.ToString();
  if (!resource.location.empty()) azure["region"] = resource.location;
  body["azure"] = std::move(azure);
  // The canonical ARM property tree; the Cluster Service of this project reads it as is.
  body["properties"] = resource.properties;
  return body;
}

json::object ClusterServiceUpdateBody(const arm::ResourceId& id, const api::Resource& resource) {
  json::object body;
  body["kind"] = CsKind(id.kind);
  body["properties"] = resource.properties;
  return body;
}

}  // namespace hcprp::frontend
