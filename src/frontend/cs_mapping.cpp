#include "frontend/cs_mapping.h"

#include "clusterservice/client.h"
#include "clusterservice/convert.h"

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

Result<json::object> BuildClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource,
                                                   std::string_view tenant_id) {
  clusterservice::AzureContext azure;
  azure.resource_id = id.ToString();
  switch (id.kind) {
    case arm::ResourceKind::kCluster:
      azure.location = resource.location;
      azure.tenant_id = std::string(tenant_id);
      if (resource.identity) azure.identity = *resource.identity;
      return clusterservice::ClusterToCs(resource.properties, azure);
    case arm::ResourceKind::kNodePool:
      return clusterservice::NodePoolToCs(resource.properties, azure);
    case arm::ResourceKind::kExternalAuth:
      return clusterservice::ExternalAuthToCs(resource.properties, azure);
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
      case arm::ResourceKind::kCluster:
        return clusterservice::ClusterPatchToCs(resource.properties);
      case arm::ResourceKind::kNodePool:
        return clusterservice::NodePoolPatchToCs(resource.properties);
      case arm::ResourceKind::kExternalAuth:
        return clusterservice::ExternalAuthPatchToCs(resource.properties);
    }
    return json::object();
  }();
  if (!patch.ok()) return {};
  return std::move(patch).value();
}

json::object ObservedFromClusterService(arm::ResourceKind kind, const json::object& cs_object) {
  if (kind != arm::ResourceKind::kCluster) return {};
  return clusterservice::ClusterReadOnlyFromCs(cs_object);
}

}  // namespace hcprp::frontend
