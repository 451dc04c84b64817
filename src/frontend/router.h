// Routing of ARM request paths (segment keywords match case-insensitively).
#pragma once

#include <boost/beast/http/verb.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "arm/cloud_error.h"
#include "arm/resource_id.h"

namespace hcprp::frontend {

enum class RouteKind {
  kHealthz,
  kReadyz,
  kOperationsList,    // /providers/Microsoft.RedHatOpenShift/operations
  kSubscription,      // /subscriptions/{sub}
  kClusterListBySub,  // /subscriptions/{sub}/providers/NS/hcpOpenShiftClusters
  kClusterListByRg,   // /subscriptions/{sub}/resourceGroups/{rg}/providers/NS/hcpOpenShiftClusters
  kResource,          // a cluster, node pool or external auth
  kChildList,         // .../hcpOpenShiftClusters/{name}/nodePools|externalAuths
  kClusterAction,     // .../hcpOpenShiftClusters/{name}/requestAdminCredential|revokeCredentials
  kOperationStatus,   // /subscriptions/{sub}/providers/NS/locations/{loc}/hcpOperationStatuses/{id}
  kOperationResult,   // .../hcpOperationResults/{id}
  kVersionList,       // .../locations/{loc}/hcpOpenShiftVersions
  kVersion,           // .../hcpOpenShiftVersions/{name}
  kRoleSetList,       // .../locations/{loc}/hcpOperatorIdentityRoleSets
  kRoleSet,           // .../hcpOperatorIdentityRoleSets/{name}
  kPreflight,         // /subscriptions/{sub}/resourcegroups/{rg}/providers/NS/deployments/{name}/preflight
};

struct Route {
  RouteKind kind = RouteKind::kHealthz;
  arm::ResourceKind resource_kind = arm::ResourceKind::kCluster;  // kResource, kChildList
  std::string subscription_id;
  std::string resource_group;
  std::string cluster_name;
  std::string child_name;
  std::string location;
  std::string name;    // operation id, version or role set name, deployment name
  std::string action;  // "requestAdminCredential" / "revokeCredentials" (canonical casing)
  std::vector<boost::beast::http::verb> methods;  // methods the route serves

  bool NeedsApiVersion() const { return kind != RouteKind::kHealthz && kind != RouteKind::kReadyz; }
  bool SubscriptionScoped() const {
    return kind != RouteKind::kHealthz && kind != RouteKind::kReadyz && kind != RouteKind::kOperationsList &&
           kind != RouteKind::kSubscription;
  }
  arm::ResourceId ResourceIdOf() const;
};

// Splits a decoded path ("/a/b") into segments; InvalidArgument for empty segments ("//").
// Percent-decodes each segment.
Result<std::vector<std::string>> SplitPath(std::string_view raw_path);

// Matches a path against the routes. A path that matches no route: 404 NotFound, or 404
// InvalidResourceType when it names an unknown type under Microsoft.RedHatOpenShift. A route that
// does not serve `method`: 405 MethodNotAllowed.
std::variant<Route, arm::CloudError> MatchRoute(const std::vector<std::string>& segments,
                                                boost::beast::http::verb method);

// The path template of a matched route with its variable segments in braces, e.g.
// "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.RedHatOpenShift/
// hcpOpenShiftClusters/{hcpOpenShiftClusterName}": a bounded label for metrics, never an ID.
std::string_view RouteTemplate(const Route& route);

}  // namespace hcprp::frontend
