// Conversion between the RP's canonical ARM shapes and Cluster Service (OCM aro_hcp v1alpha1) objects.
//
// Input: the `properties` object of a resource in the 2026-10-01 wire shape (HcpOpenShiftClusterProperties,
// NodePoolProperties, ExternalAuthProperties: camelCase, as the api layer produces it after defaults)
// plus the Azure resource ID, location and identity. Output: the snake_case OCM object to POST (or PATCH).
// Read-only ARM fields (provisioningState, status, URLs) are never sent. Unknown fields are ignored;
// validation is the api layer's job, these functions only refuse input they cannot convert.
//
// Field map (ARM -> Cluster Service), cluster:
//   resource ID               -> name, azure.{subscription_id, resource_group_name, resource_name}
//   location                  -> region.id
//   tenant ID                 -> azure.tenant_id
//   version.{id,channelGroup} -> version.{id ("openshift-v" + id), channel_group}
//   dns.baseDomainPrefix      -> dns.base_domain_prefix
//   network.*                 -> network.{type, pod_cidr, service_cidr, machine_cidr, host_prefix}
//   api.visibility            -> api.listening ("external" | "internal"), api.authorizedCidrs ->
//   api.cidr_block_access platform.*                -> azure.{managed_resource_group_name,
//   subnet_resource_id,
//                                vnet_integration_subnet_resource_id, network_security_group_resource_id,
//                                nodes_outbound_connectivity.outbound_type, operators_authentication}
//   identity.userAssignedIdentities -> azure.operators_authentication.managed_identities (resource IDs only)
//   autoscaling, etcd, clusterImageRegistry, nodeDrainTimeoutMinutes, imageDigestMirrors -> likewise
//   snake_case
// Node pool: version, replicas, autoScaling -> autoscaling{min_replica,max_replica}, autoRepair,
//   platform -> azure_node_pool{vm_size, os_disk{...}, encryption_at_host}, subnet_resource_id,
//   availability_zone, labels (map), taints, nodeDrainTimeoutMinutes.
// External auth: issuer{url, audiences, ca}, clients[{component{name,namespace}, id, extra_scopes, type}],
//   claim{mappings{user_name{claim,prefix,prefix_policy}, groups{claim,prefix}}, validation_rules}.
#pragma once

#include <string>
#include <string_view>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::clusterservice {

// The Azure side of a resource, as the RP knows it.
struct AzureContext {
  std::string resource_id;  // "/subscriptions/{s}/resourceGroups/{rg}/providers/.../{name}[/nodePools/{np}]"
  std::string location;     // "eastus"; clusters only
  std::string tenant_id;    // clusters only; may be empty
  json::object identity;    // the ARM ManagedServiceIdentity; clusters only; may be empty
};

// Full objects for POST.
Result<json::object> ClusterToCs(const json::object& properties, const AzureContext& azure);
Result<json::object> NodePoolToCs(const json::object& properties, const AzureContext& azure);
Result<json::object> ExternalAuthToCs(const json::object& properties, const AzureContext& azure);

// Patches for PATCH: the same conversion restricted to fields the Cluster Service lets change
// (cluster: version, api.authorizedCidrs, autoscaling, nodeDrainTimeoutMinutes, tags-free parts;
// node pool: version, replicas, autoScaling, autoRepair, labels, taints, nodeDrainTimeoutMinutes;
// external auth: everything but the name).
Result<json::object> ClusterPatchToCs(const json::object& properties);
Result<json::object> NodePoolPatchToCs(const json::object& properties);
Result<json::object> ExternalAuthPatchToCs(const json::object& properties);

// The Cluster Service `properties` that carry a cluster's experimental features
// (api::Resource::experimental, api/experimental.h): hosted_cluster_single_replica "true" for a
// single-replica control plane, hosted_cluster_size_override "e2e_minimal" for minimal pod sizing,
// control_plane_operator_image for an operator image override; empty when none is on. The Cluster
// Service replaces the whole map on a PATCH, so an update sends it even when empty.
json::object ExperimentalPropertiesToCs(const json::object& experimental);

// Read-only values the Cluster Service assigns, in ARM shape, for the frontend to merge into the
// resource it returns: cluster {api.url, console.url, dns.baseDomain, platform.issuerUrl}; empty for
// objects without such values.
json::object ClusterReadOnlyFromCs(const json::object& cs_cluster);

}  // namespace hcprp::clusterservice
