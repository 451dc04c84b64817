// ARM resource IDs of the resource types hcprp serves, and the name rules of their segments.
//
//   /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}
//   .../hcpOpenShiftClusters/{name}/nodePools/{name}
//   .../hcpOpenShiftClusters/{name}/externalAuths/{name}
//
// Segment keywords match case-insensitively; names keep the casing they were given. Two IDs denote
// the same resource when they are equal ignoring case.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp::arm {

inline constexpr std::string_view kProviderNamespace = "Microsoft.RedHatOpenShift";
inline constexpr std::string_view kClusterType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters";
inline constexpr std::string_view kNodePoolType = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools";
inline constexpr std::string_view kExternalAuthType =
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/externalAuths";
inline constexpr std::string_view kVersionType = "Microsoft.RedHatOpenShift/hcpOpenShiftVersions";
inline constexpr std::string_view kRoleSetType = "Microsoft.RedHatOpenShift/hcpOperatorIdentityRoleSets";

enum class ResourceKind { kCluster, kNodePool, kExternalAuth };

// The ARM type ("Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools") and the lower-cased
// document type of a kind.
std::string_view ArmType(ResourceKind kind);
std::string_view DocType(ResourceKind kind);
// The child collection segment ("nodePools", "externalAuths"); empty for clusters.
std::string_view ChildSegment(ResourceKind kind);

struct ResourceId {
  ResourceKind kind = ResourceKind::kCluster;
  std::string subscription_id;
  std::string resource_group;
  std::string cluster_name;
  std::string child_name;  // node pool or external auth name; empty for clusters

  // The ID with canonical keyword casing and the names as given.
  std::string ToString() const;
  // The cluster this resource belongs to (itself for a cluster).
  ResourceId Cluster() const;
  const std::string& Name() const { return kind == ResourceKind::kCluster ? cluster_name : child_name; }
};

// Parses an ID of one of the three kinds. Anything else is InvalidArgument. Names are not checked
// against the name rules (see below), so that the caller can choose the error it answers.
Result<ResourceId> ParseResourceId(std::string_view id);

// The final segment of an ID string ("/a/b/c" -> "c").
std::string_view LastSegment(std::string_view id);

// Name rules (from the API specification).
bool IsValidSubscriptionId(std::string_view s);     // a UUID
bool IsValidResourceGroupName(std::string_view s);  // 1-90 of [-\w._()], not ending in '.'
bool IsValidClusterName(std::string_view s);        // ^[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?$
bool IsValidChildName(std::string_view s);          // ^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$
bool IsValidLocation(std::string_view s);           // 1-64 of [a-zA-Z0-9]
bool IsValidVersionName(std::string_view s);        // ^[a-zA-Z0-9-\.]{3,24}$

}  // namespace hcprp::arm
