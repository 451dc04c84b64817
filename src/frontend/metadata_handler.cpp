// Read-only metadata: hcpOpenShiftVersions, hcpOperatorIdentityRoleSets, the provider's operations
// list, and the health probes.
#include <algorithm>
#include <cctype>

#include "clusterservice/client.h"
#include "frontend/internal.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

struct RoleDef {
  std::string_view operator_name;
  std::string_view role_name;
  std::string_view role_id;
};

// The operator identities of the control plane and data plane (as published in the API examples); the
// storage and image registry operators act in both.
constexpr RoleDef kDiskCsiDriver{"disk-csi-driver", "Azure Red Hat OpenShift Disk Storage Operator",
                                 "5b7237c5-45e1-49d6-bc18-a1f62f400748"};
constexpr RoleDef kFileCsiDriver{"file-csi-driver", "Azure Red Hat OpenShift File Storage Operator",
                                 "0d7aedc0-15fd-4a67-a412-efad370c947e"};
constexpr RoleDef kImageRegistry{"image-registry", "Azure Red Hat OpenShift Image Registry Operator",
                                 "8b32b316-c2f5-4ddf-b05b-83dacd2d08b5"};
constexpr RoleDef kControlPlane[] = {
    {"cluster-api-azure", "Azure Red Hat OpenShift Hosted Control Planes Cluster API Provider",
     "88366f10-ed47-4cc0-9fab-c8a06148393e"},
    {"control-plane", "Azure Red Hat OpenShift Hosted Control Planes Control Plane Operator",
     "fc0c873f-45e9-4d0d-a7d1-585aab30c6ed"},
    {"cloud-controller-manager", "Azure Red Hat OpenShift Cloud Controller Manager",
     "a1f96423-95ce-4224-ab27-4e3dc72facd4"},
    {"ingress", "Azure Red Hat OpenShift Cluster Ingress Operator", "0336e1d3-7a87-462b-b6db-342b63f7802c"},
    kDiskCsiDriver,
    kFileCsiDriver,
    kImageRegistry,
    {"cloud-network-config", "Azure Red Hat OpenShift Network Operator",
     "be7a6435-15ae-4171-8f30-4a343eff9e8f"},
};
constexpr RoleDef kDataPlane[] = {kDiskCsiDriver, kFileCsiDriver, kImageRegistry};
constexpr std::string_view kRoleSetVersions[] = {"4.18", "4.19", "4.20"};

std::string LocationScope(const RequestContext& ctx) {
  return "/subscriptions/" + ctx.route.subscription_id + "/providers/" +
         std::string(arm::kProviderNamespace) + "/locations/" + ctx.route.location;
}

json::array Operators(const RoleDef* begin, const RoleDef* end) {
  json::array out;
  for (const RoleDef* r = begin; r != end; ++r) {
    json::object def;
    def["name"] = r->role_name;
    def["resourceId"] = "/providers/Microsoft.Authorization/roleDefinitions/" + std::string(r->role_id);
    json::object op;
    op["name"] = r->operator_name;
    op["required"] = "Always";
    op["roleDefinitions"] = json::array{def};
    out.push_back(std::move(op));
  }
  return out;
}

json::object RoleSet(const RequestContext& ctx, std::string_view version) {
  json::object props;
  props["controlPlaneOperators"] = Operators(std::begin(kControlPlane), std::end(kControlPlane));
  props["dataPlaneOperators"] = Operators(std::begin(kDataPlane), std::end(kDataPlane));
  json::object o;
  o["id"] = LocationScope(ctx) + "/hcpOperatorIdentityRoleSets/" + std::string(version);
  o["name"] = version;
  o["type"] = arm::kRoleSetType;
  o["properties"] = std::move(props);
  return o;
}

constexpr std::string_view kOcmVersionPrefix = "openshift-v";
// What an absent end of life becomes: Go's zero time, as the real service renders it.
constexpr std::string_view kZeroTime = "0001-01-01T00:00:00Z";

// An hcpOpenShiftVersion from a Cluster Service version ({id: "openshift-v4.20.8[-group]", channel_group,
// enabled, end_of_life_timestamp}): named by the ID without its prefix, as the real service names it.
// nullopt for an object without an ID.
std::optional<json::object> Version(const RequestContext& ctx, const json::object& cs) {
  auto id = GetString(cs, "id");
  if (!id || id->empty()) return std::nullopt;
  std::string name(*id);
  if (name.rfind(kOcmVersionPrefix, 0) == 0) name.erase(0, kOcmVersionPrefix.size());
  json::object props;
  props["channelGroup"] = GetString(cs, "channel_group").value_or("");
  props["enabled"] = GetBool(cs, "enabled").value_or(false);
  auto eol = GetString(cs, "end_of_life_timestamp");
  props["endOfLifeTimestamp"] = eol && !eol->empty() ? *eol : kZeroTime;
  json::object o;
  o["id"] = LocationScope(ctx) + "/hcpOpenShiftVersions/" + name;
  o["name"] = name;
  o["type"] = arm::kVersionType;
  o["properties"] = std::move(props);
  return o;
}

// Every version the Cluster Service lists, enabled or not, in every channel group (as the real
// service lists them).
Result<json::array> Versions(Env& env, const RequestContext& ctx) {
  HCPRP_ASSIGN_OR_RETURN(auto listed, env.cs->List(std::string(clusterservice::kApiPrefix) + "/versions"));
  json::array out;
  for (const auto& v : listed) {
    if (!v.is_object()) continue;
    if (auto item = Version(ctx, v.as_object())) out.push_back(std::move(*item));
  }
  return out;
}

json::object Operation(std::string_view name, std::string_view resource, std::string_view operation,
                       std::string_view description) {
  json::object display;
  display["provider"] = "Microsoft Red Hat OpenShift";
  display["resource"] = resource;
  display["operation"] = operation;
  display["description"] = description;
  json::object o;
  o["name"] = std::string(arm::kProviderNamespace) + "/" + std::string(name);
  o["isDataAction"] = false;
  o["display"] = std::move(display);
  o["origin"] = "user,system";
  return o;
}

json::array OperationsList() {
  json::array out;
  struct Type {
    std::string_view path;
    std::string_view display;
  };
  for (const Type& t : {Type{"hcpOpenShiftClusters", "HCP OpenShift cluster"},
                        Type{"hcpOpenShiftClusters/nodePools", "Node pool"},
                        Type{"hcpOpenShiftClusters/externalAuths", "External authentication"}}) {
    std::string p(t.path);
    out.push_back(Operation(p + "/read", t.display, "Read", "Reads the resource."));
    out.push_back(Operation(p + "/write", t.display, "Create or update", "Creates or updates the resource."));
    out.push_back(Operation(p + "/delete", t.display, "Delete", "Deletes the resource."));
  }
  out.push_back(Operation("hcpOpenShiftClusters/requestAdminCredential/action", "HCP OpenShift cluster",
                          "Request admin credential", "Issues a temporary cluster-admin kubeconfig."));
  out.push_back(Operation("hcpOpenShiftClusters/revokeCredentials/action", "HCP OpenShift cluster",
                          "Revoke credentials", "Revokes every admin credential issued for the cluster."));
  out.push_back(Operation("locations/hcpOperationStatuses/read", "Operation status", "Read",
                          "Reads the status of an asynchronous operation."));
  out.push_back(Operation("locations/hcpOperationResults/read", "Operation result", "Read",
                          "Reads the result of an asynchronous operation."));
  out.push_back(Operation("locations/hcpOpenShiftVersions/read", "OpenShift version", "Read",
                          "Lists the OpenShift versions available in a location."));
  out.push_back(Operation("locations/hcpOperatorIdentityRoleSets/read", "Operator identity role set", "Read",
                          "Lists the role sets operator identities need."));
  out.push_back(Operation("operations/read", "Operations", "Read", "Lists the operations of the provider."));
  return out;
}

Response List(json::array value) {
  json::object out;
  out["value"] = std::move(value);
  return JsonReply(200, out);
}

}  // namespace

Response HandleMetadata(Env& env, RequestContext& ctx) {
  switch (ctx.route.kind) {
    case RouteKind::kOperationsList:
      return List(OperationsList());
    case RouteKind::kRoleSetList: {
      json::array all;
      for (auto v : kRoleSetVersions) all.push_back(RoleSet(ctx, v));
      return List(std::move(all));
    }
    case RouteKind::kRoleSet:
      for (auto v : kRoleSetVersions) {
        if (EqualsIgnoreCase(v, ctx.route.name)) return JsonReply(200, RoleSet(ctx, v));
      }
      break;
    case RouteKind::kVersionList: {
      auto versions = Versions(env, ctx);
      if (!versions.ok()) return ErrorReply(arm::FromError(versions.error()));
      return List(std::move(*versions));
    }
    case RouteKind::kVersion: {
      const bool plain = std::all_of(ctx.route.name.begin(), ctx.route.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
      });
      if (!plain) break;
      auto cs = env.cs->Get(std::string(clusterservice::kApiPrefix) + "/versions/" +
                            std::string(kOcmVersionPrefix) + ToLower(ctx.route.name));
      if (cs.ok()) {
        if (auto v = Version(ctx, *cs)) return JsonReply(200, *v);
      } else if (!cs.error().IsNotFound()) {
        return ErrorReply(arm::FromError(cs.error()));
      }
      break;
    }
    default:
      break;
  }
  return ErrorReply(CloudError(404, arm::codes::kNotFound,
                               "The resource '" + ctx.route.name + "' was not found.", ctx.path));
}

Response HandleHealth(Env& env, RequestContext& ctx) {
  if (ctx.route.kind == RouteKind::kHealthz) return JsonReply(200, json::object{{"status", "ok"}});
  // Ready when the store answers a point read and, where the composition root gave a write probe,
  // can write (a full disk or a read-only file fails writes while reads still succeed).
  auto probe = env.store->Read(store::kResources, "readyz", "readyz");
  if (!probe.ok() && !probe.error().IsNotFound()) {
    env.logger.Warn("readiness probe failed", {{"error", probe.error().ToString()}});
    return ErrorReply(
        CloudError(503, arm::codes::kServiceUnavailable, "The document store is not available."));
  }
  if (env.options.write_probe) {
    if (Status writable = env.options.write_probe(); !writable.ok()) {
      env.logger.Warn("readiness write probe failed", {{"error", writable.error().ToString()}});
      return ErrorReply(
          CloudError(503, arm::codes::kServiceUnavailable, "The document store cannot write at the moment."));
    }
  }
  return JsonReply(200, json::object{{"status", "ok"}});
}

}  // namespace hcprp::frontend
