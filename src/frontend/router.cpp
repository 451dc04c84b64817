#include "frontend/router.h"

#include "core/json.h"
#include "core/url_encoding.h"

namespace hcprp::frontend {
namespace {

using boost::beast::http::verb;

bool Is(const std::string& seg, std::string_view word) { return EqualsIgnoreCase(seg, word); }

arm::CloudError NotFound(std::string_view what) {
  return {404, arm::codes::kNotFound, "The requested path '" + std::string(what) + "' was not found."};
}

arm::CloudError UnknownType(std::string_view type) {
  return {404, arm::codes::kInvalidResourceType,
          "The resource type '" + std::string(type) + "' could not be found in the namespace '" +
              std::string(arm::kProviderNamespace) + "'."};
}

std::variant<Route, arm::CloudError> Check(Route r, verb method) {
  for (auto m : r.methods) {
    if (m == method) return r;
  }
  return arm::CloudError(405, arm::codes::kMethodNotAllowed,
                         "The HTTP method '" + std::string(boost::beast::http::to_string(method)) +
                             "' is not supported for this resource.");
}

// segments after ".../providers/Microsoft.RedHatOpenShift" of a resource-group scope path.
std::variant<Route, arm::CloudError> MatchRgScope(Route r, const std::vector<std::string>& s, size_t i,
                                                  verb method) {
  // s[i] is the first segment after the namespace.
  size_t n = s.size() - i;
  if (n == 0) return NotFound("providers");
  if (Is(s[i], "deployments")) {
    if (n == 3 && Is(s[i + 2], "preflight")) {
      r.kind = RouteKind::kPreflight;
      r.name = s[i + 1];
      r.methods = {verb::post};
      return Check(std::move(r), method);
    }
    return NotFound("deployments");
  }
  if (!Is(s[i], "hcpOpenShiftClusters")) return UnknownType(s[i]);
  if (n == 1) {
    r.kind = RouteKind::kClusterListByRg;
    r.methods = {verb::get};
    return Check(std::move(r), method);
  }
  r.cluster_name = s[i + 1];
  if (n == 2) {
    r.kind = RouteKind::kResource;
    r.resource_kind = arm::ResourceKind::kCluster;
    r.methods = {verb::get, verb::put, verb::patch, verb::delete_};
    return Check(std::move(r), method);
  }
  const std::string& sub = s[i + 2];
  if (n == 3 && (Is(sub, "requestAdminCredential") || Is(sub, "revokeCredentials"))) {
    r.kind = RouteKind::kClusterAction;
    r.action = Is(sub, "requestAdminCredential") ? "requestAdminCredential" : "revokeCredentials";
    r.methods = {verb::post};
    return Check(std::move(r), method);
  }
  arm::ResourceKind kind;
  if (Is(sub, "nodePools")) {
    kind = arm::ResourceKind::kNodePool;
  } else if (Is(sub, "externalAuths")) {
    kind = arm::ResourceKind::kExternalAuth;
  } else {
    return UnknownType("hcpOpenShiftClusters/" + sub);
  }
  r.resource_kind = kind;
  if (n == 3) {
    r.kind = RouteKind::kChildList;
    r.methods = {verb::get};
    return Check(std::move(r), method);
  }
  if (n == 4) {
    r.kind = RouteKind::kResource;
    r.child_name = s[i + 3];
    r.methods = {verb::get, verb::put, verb::patch, verb::delete_};
    return Check(std::move(r), method);
  }
  return NotFound(sub);
}

// segments after /subscriptions/{sub}/providers/Microsoft.RedHatOpenShift.
std::variant<Route, arm::CloudError> MatchSubScope(Route r, const std::vector<std::string>& s, size_t i,
                                                   verb method) {
  size_t n = s.size() - i;
  if (n == 0) return NotFound("providers");
  if (Is(s[i], "hcpOpenShiftClusters") && n == 1) {
    r.kind = RouteKind::kClusterListBySub;
    r.methods = {verb::get};
    return Check(std::move(r), method);
  }
  if (!Is(s[i], "locations")) return UnknownType(s[i]);
  if (n < 3) return NotFound("locations");
  r.location = s[i + 1];
  const std::string& type = s[i + 2];
  r.methods = {verb::get};
  if (n == 4 && Is(type, "hcpOperationStatuses")) {
    r.kind = RouteKind::kOperationStatus;
  } else if (n == 4 && Is(type, "hcpOperationResults")) {
    r.kind = RouteKind::kOperationResult;
  } else if (Is(type, "hcpOpenShiftVersions") && (n == 3 || n == 4)) {
    r.kind = n == 3 ? RouteKind::kVersionList : RouteKind::kVersion;
  } else if (Is(type, "hcpOperatorIdentityRoleSets") && (n == 3 || n == 4)) {
    r.kind = n == 3 ? RouteKind::kRoleSetList : RouteKind::kRoleSet;
  } else if (Is(type, "hcpOperationStatuses") || Is(type, "hcpOperationResults")) {
    return NotFound(type);
  } else {
    return UnknownType("locations/" + type);
  }
  if (n == 4) r.name = s[i + 3];
  return Check(std::move(r), method);
}

}  // namespace

arm::ResourceId Route::ResourceIdOf() const {
  arm::ResourceId id;
  id.kind = resource_kind;
  id.subscription_id = subscription_id;
  id.resource_group = resource_group;
  id.cluster_name = cluster_name;
  id.child_name = child_name;
  return id;
}

Result<std::vector<std::string>> SplitPath(std::string_view raw_path) {
  std::vector<std::string> out;
  out.reserve(10);  // a child resource's path has 10 segments
  if (raw_path.empty() || raw_path.front() != '/') return Error::InvalidArgument("path must start with '/'");
  std::string_view rest = raw_path.substr(1);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t end = rest.find('/', start);
    std::string_view seg =
        rest.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (seg.empty()) return Error::InvalidArgument("empty path segment");
    if (seg.find('%') == std::string_view::npos) {
      out.emplace_back(seg);
      if (end == std::string_view::npos) break;
      start = end + 1;
      continue;
    }
    auto decoded = PercentDecode(seg);
    if (!decoded.ok()) return Error::InvalidArgument("bad percent escape in path");
    if (decoded->find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
      return Error::InvalidArgument("encoded separator in path");
    }
    out.push_back(std::move(*decoded));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::variant<Route, arm::CloudError> MatchRoute(const std::vector<std::string>& s, verb method) {
  Route r;
  const size_t n = s.size();
  if (n == 1 && Is(s[0], "healthz")) {
    r.kind = RouteKind::kHealthz;
    r.methods = {verb::get, verb::head};
    return Check(std::move(r), method);
  }
  if (n == 1 && Is(s[0], "readyz")) {
    r.kind = RouteKind::kReadyz;
    r.methods = {verb::get, verb::head};
    return Check(std::move(r), method);
  }
  if (n >= 2 && Is(s[0], "providers")) {
    if (!Is(s[1], arm::kProviderNamespace)) return NotFound("providers/" + s[1]);
    if (n == 3 && Is(s[2], "operations")) {
      r.kind = RouteKind::kOperationsList;
      r.methods = {verb::get};
      return Check(std::move(r), method);
    }
    return n >= 3 ? UnknownType(s[2]) : NotFound("providers");
  }
  if (n < 2 || !Is(s[0], "subscriptions")) return NotFound(n == 0 ? "/" : s[0]);
  r.subscription_id = s[1];
  if (n == 2) {
    r.kind = RouteKind::kSubscription;
    r.methods = {verb::get, verb::put};
    return Check(std::move(r), method);
  }
  if (Is(s[2], "providers")) {
    if (n < 4 || !Is(s[3], arm::kProviderNamespace)) return NotFound("providers");
    return MatchSubScope(std::move(r), s, 4, method);
  }
  if (Is(s[2], "resourceGroups")) {
    if (n < 6 || !Is(s[4], "providers") || !Is(s[5], arm::kProviderNamespace))
      return NotFound("resourceGroups");
    r.resource_group = s[3];
    return MatchRgScope(std::move(r), s, 6, method);
  }
  return NotFound(s[2]);
}

std::string_view RouteTemplate(const Route& route) {
#define HCPRP_SUB "/subscriptions/{subscriptionId}"
#define HCPRP_RG HCPRP_SUB "/resourceGroups/{resourceGroupName}/providers/Microsoft.RedHatOpenShift"
#define HCPRP_LOC HCPRP_SUB "/providers/Microsoft.RedHatOpenShift/locations/{location}"
#define HCPRP_CLUSTER HCPRP_RG "/hcpOpenShiftClusters/{hcpOpenShiftClusterName}"
  switch (route.kind) {
    case RouteKind::kHealthz:
      return "/healthz";
    case RouteKind::kReadyz:
      return "/readyz";
    case RouteKind::kOperationsList:
      return "/providers/Microsoft.RedHatOpenShift/operations";
    case RouteKind::kSubscription:
      return HCPRP_SUB;
    case RouteKind::kClusterListBySub:
      return HCPRP_SUB "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters";
    case RouteKind::kClusterListByRg:
      return HCPRP_RG "/hcpOpenShiftClusters";
    case RouteKind::kResource:
      switch (route.resource_kind) {
        case arm::ResourceKind::kCluster:
          return HCPRP_CLUSTER;
        case arm::ResourceKind::kNodePool:
          return HCPRP_CLUSTER "/nodePools/{nodePoolName}";
        case arm::ResourceKind::kExternalAuth:
          return HCPRP_CLUSTER "/externalAuths/{externalAuthName}";
      }
      return HCPRP_CLUSTER;
    case RouteKind::kChildList:
      return route.resource_kind == arm::ResourceKind::kNodePool ? HCPRP_CLUSTER "/nodePools"
                                                                 : HCPRP_CLUSTER "/externalAuths";
    case RouteKind::kClusterAction:
      return route.action == "requestAdminCredential" ? HCPRP_CLUSTER "/requestAdminCredential"
                                                      : HCPRP_CLUSTER "/revokeCredentials";
    case RouteKind::kOperationStatus:
      return HCPRP_LOC "/hcpOperationStatuses/{operationId}";
    case RouteKind::kOperationResult:
      return HCPRP_LOC "/hcpOperationResults/{operationId}";
    case RouteKind::kVersionList:
      return HCPRP_LOC "/hcpOpenShiftVersions";
    case RouteKind::kVersion:
      return HCPRP_LOC "/hcpOpenShiftVersions/{versionName}";
    case RouteKind::kRoleSetList:
      return HCPRP_LOC "/hcpOperatorIdentityRoleSets";
    case RouteKind::kRoleSet:
      return HCPRP_LOC "/hcpOperatorIdentityRoleSets/{roleSetName}";
    case RouteKind::kPreflight:
      return HCPRP_RG "/deployments/{deploymentName}/preflight";
  }
#undef HCPRP_CLUSTER
#undef HCPRP_LOC
#undef HCPRP_RG
#undef HCPRP_SUB
  return "unmatched";
}

}  // namespace hcprp::frontend
