#include "clusterservice/convert.h"
#include "api/experimental.h"

#include "arm/resource_id.h"

#include <initializer_list>
#include <vector>

namespace hcprp::clusterservice {
namespace {

// Copies member `from` of `src` to member `to` of `dst` when present and not null.
void Copy(const json::object& src, std::string_view from, json::object& dst, std::string_view to) {
  auto it = src.find(from);
  if (it != src.end() && !it->value().is_null()) dst[to] = it->value();
}

// An ARM member and the Cluster Service member it becomes.
struct Rename {
  std::string_view from, to;
};

// Copy for each of `renames`, in order.
void CopyAll(const json::object& src, json::object& dst, std::initializer_list<Rename> renames) {
  for (const Rename& r : renames) Copy(src, r.from, dst, r.to);
}

// The members of `src` named in `renames`, renamed.
json::object Renamed(const json::object& src, std::initializer_list<Rename> renames) {
  json::object out;
  CopyAll(src, out, renames);
  return out;
}

// The ID of the resource `az` is about, which must be of `kind` (`what`: "a cluster", ...).
Result<arm::ResourceId> ResourceIdOfKind(const AzureContext& az, arm::ResourceKind kind,
                                         std::string_view what) {
  HCPRP_ASSIGN_OR_RETURN(auto id, arm::ParseResourceId(az.resource_id));
  if (id.kind != kind) {
    return Error::InvalidArgument("not " + std::string(what) + " resource ID: " + az.resource_id);
  }
  return id;
}

const json::object& ObjectOrEmpty(const json::object& o, std::string_view key) {
  static const json::object kEmpty;
  const json::object* p = GetObject(o, key);
  return p ? *p : kEmpty;
}

// Sets dst[key] = value unless value is empty.
void SetIfNotEmpty(json::object& dst, std::string_view key, json::object value) {
  if (!value.empty()) dst[key] = std::move(value);
}

std::string LowerAscii(std::string_view s) { return ToLower(s); }

json::object VersionToCs(const json::object& v) {
  json::object out;
  if (auto id = GetString(v, "id"); id && !id->empty()) {
    std::string s(*id);
    out["id"] = s.rfind("openshift-v", 0) == 0 ? s : "openshift-v" + s;
  }
  Copy(v, "channelGroup", out, "channel_group");
  return out;
}

json::object NetworkToCs(const json::object& n) {
  return Renamed(n, {{"networkType", "type"},
                     {"podCidr", "pod_cidr"},
                     {"serviceCidr", "service_cidr"},
                     {"machineCidr", "machine_cidr"},
                     {"hostPrefix", "host_prefix"}});
}

json::object ApiToCs(const json::object& a) {
  json::object out;
  if (auto vis = GetString(a, "visibility"))
    out["listening"] = EqualsIgnoreCase(*vis, "Private") ? "internal" : "external";
  if (auto* cidrs = GetArray(a, "authorizedCidrs")) {
    json::object allow{{"mode", "allow_list"}, {"values", *cidrs}};
    out["cidr_block_access"] = json::object{{"allow", std::move(allow)}};
  }
  return out;
}

// {"name": "/subscriptions/.../userAssignedIdentities/x"} -> {"name": {"resource_id": "..."}}
json::object IdentityMapToCs(const json::object& m) {
  json::object out;
  for (const auto& [k, v] : m) {
    if (v.is_string()) out[k] = json::object{{"resource_id", v}};
  }
  return out;
}

json::object OperatorsAuthToCs(const json::object& oa) {
  const json::object& uai = ObjectOrEmpty(oa, "userAssignedIdentities");
  if (uai.empty()) return {};
  json::object mi;
  SetIfNotEmpty(mi, "control_plane_operators_managed_identities",
                IdentityMapToCs(ObjectOrEmpty(uai, "controlPlaneOperators")));
  SetIfNotEmpty(mi, "data_plane_operators_managed_identities",
                IdentityMapToCs(ObjectOrEmpty(uai, "dataPlaneOperators")));
  if (auto smi = GetString(uai, "serviceManagedIdentity")) {
    mi["service_managed_identity"] = json::object{{"resource_id", *smi}};
  }
  json::object out;
  SetIfNotEmpty(out, "managed_identities", std::move(mi));
  return out;
}

json::object EtcdToCs(const json::object& e) {
  const json::object& de = ObjectOrEmpty(e, "dataEncryption");
  if (de.empty()) return {};
  json::object out;
  Copy(de, "keyManagementMode", out, "key_management_mode");
  const json::object& cm = ObjectOrEmpty(de, "customerManaged");
  if (!cm.empty()) {
    json::object cmo = Renamed(cm, {{"encryptionType", "encryption_type"}});
    const json::object& kms = ObjectOrEmpty(cm, "kms");
    if (!kms.empty()) {
      json::object k = Renamed(kms, {{"vaultName", "key_vault_name"},
                                     {"visibility", "visibility"},
                                     {"keyVaultType", "key_vault_type"}});
      json::object ak =
          Renamed(ObjectOrEmpty(kms, "activeKey"), {{"name", "key_name"}, {"version", "key_version"}});
      if (auto vn = GetString(kms, "vaultName")) ak["key_vault_name"] = *vn;
      SetIfNotEmpty(k, "active_key", std::move(ak));
      cmo["kms"] = std::move(k);
    }
    out["customer_managed"] = std::move(cmo);
  }
  return json::object{{"data_encryption", std::move(out)}};
}

json::object AutoscalerToCs(const json::object& a) {
  json::object out;
  if (auto v = GetInt(a, "maxNodesTotal")) out["resource_limits"] = json::object{{"max_nodes_total", *v}};
  if (auto v = GetInt(a, "maxPodGracePeriodSeconds")) out["pod_termination_grace_period_seconds"] = *v;
  if (auto v = GetInt(a, "maxNodeProvisionTimeSeconds"))
    out["max_node_provision_time"] = std::to_string(*v) + "s";
  if (auto v = GetInt(a, "podPriorityThreshold")) out["pod_priority_threshold"] = *v;
  return out;
}

json::array ImageDigestMirrorsToCs(const json::array& a) {
  json::array out;
  for (const auto& m : a) {
    if (!m.is_object()) continue;
    out.push_back(Renamed(m.as_object(), {{"source", "source"}, {"mirrors", "mirrors"}}));
  }
  return out;
}

void CopyDrainTimeout(const json::object& props, json::object& out) {
  if (auto v = GetInt(props, "nodeDrainTimeoutMinutes")) {
    out["node_drain_grace_period"] = json::object{{"value", *v}, {"unit", "minutes"}};
  }
}

void ClusterMutableToCs(const json::object& p, json::object& out) {
  SetIfNotEmpty(out, "version", VersionToCs(ObjectOrEmpty(p, "version")));
  if (auto* cidrs = GetArray(ObjectOrEmpty(p, "api"), "authorizedCidrs")) {
    json::object api;
    api["cidr_block_access"] =
        json::object{{"allow", json::object{{"mode", "allow_list"}, {"values", *cidrs}}}};
    out["api"] = std::move(api);
  }
  SetIfNotEmpty(out, "autoscaler", AutoscalerToCs(ObjectOrEmpty(p, "autoscaling")));
  CopyDrainTimeout(p, out);
}

json::object NodePoolMutableToCs(const json::object& p) {
  json::object out;
  SetIfNotEmpty(out, "version", VersionToCs(ObjectOrEmpty(p, "version")));
  CopyAll(p, out, {{"replicas", "replicas"}, {"autoRepair", "auto_repair"}});
  const json::object& as = ObjectOrEmpty(p, "autoScaling");
  if (!as.empty()) out["autoscaling"] = Renamed(as, {{"min", "min_replica"}, {"max", "max_replica"}});
  if (auto* labels = GetArray(p, "labels")) {
    json::object m;
    for (const auto& l : *labels) {
      if (!l.is_object()) continue;
      auto k = GetString(l.as_object(), "key");
      if (!k) continue;
      m[*k] = GetString(l.as_object(), "value").value_or("");
    }
    out["labels"] = std::move(m);
  }
  if (auto* taints = GetArray(p, "taints")) {
    json::array t;
    for (const auto& x : *taints) {
      if (!x.is_object()) continue;
      t.push_back(Renamed(x.as_object(), {{"key", "key"}, {"value", "value"}, {"effect", "effect"}}));
    }
    out["taints"] = std::move(t);
  }
  CopyDrainTimeout(p, out);
  return out;
}

json::object ExternalAuthBodyToCs(const json::object& p) {
  json::object out;
  const json::object& issuer = ObjectOrEmpty(p, "issuer");
  if (!issuer.empty())
    out["issuer"] = Renamed(issuer, {{"url", "url"}, {"audiences", "audiences"}, {"ca", "ca"}});
  if (auto* clients = GetArray(p, "clients")) {
    json::array cs;
    for (const auto& c : *clients) {
      if (!c.is_object()) continue;
      const auto& co = c.as_object();
      json::object o;
      o["component"] =
          Renamed(ObjectOrEmpty(co, "component"), {{"name", "name"}, {"authClientNamespace", "namespace"}});
      CopyAll(co, o, {{"clientId", "id"}, {"extraScopes", "extra_scopes"}});
      if (auto t = GetString(co, "type")) o["type"] = LowerAscii(*t);
      cs.push_back(std::move(o));
    }
    out["clients"] = std::move(cs);
  }
  const json::object& claim = ObjectOrEmpty(p, "claim");
  if (!claim.empty()) {
    json::object c;
    const json::object& mappings = ObjectOrEmpty(claim, "mappings");
    json::object m;
    const json::object& un = ObjectOrEmpty(mappings, "username");
    if (!un.empty()) {
      m["user_name"] =
          Renamed(un, {{"claim", "claim"}, {"prefix", "prefix"}, {"prefixPolicy", "prefix_policy"}});
    }
    const json::object& groups = ObjectOrEmpty(mappings, "groups");
    if (!groups.empty()) m["groups"] = Renamed(groups, {{"claim", "claim"}, {"prefix", "prefix"}});
    SetIfNotEmpty(c, "mappings", std::move(m));
    if (auto* rules = GetArray(claim, "validationRules")) {
      json::array rs;
      for (const auto& r : *rules) {
        if (!r.is_object()) continue;
        json::object o = Renamed(r.as_object(), {{"type", "type"}});
        CopyAll(ObjectOrEmpty(r.as_object(), "requiredClaim"), o,
                {{"claim", "claim"}, {"requiredValue", "required_value"}});
        rs.push_back(std::move(o));
      }
      c["validation_rules"] = std::move(rs);
    }
    out["claim"] = std::move(c);
  }
  return out;
}

}  // namespace

Result<json::object> ClusterToCs(const json::object& p, const AzureContext& az) {
  HCPRP_ASSIGN_OR_RETURN(auto id, ResourceIdOfKind(az, arm::ResourceKind::kCluster, "a cluster"));
  json::object out;
  out["name"] = id.cluster_name;
  if (!az.location.empty()) out["region"] = json::object{{"id", LowerAscii(az.location)}};

  json::object azure;
  azure["subscription_id"] = id.subscription_id;
  azure["resource_group_name"] = id.resource_group;
  azure["resource_name"] = id.cluster_name;
  if (!az.tenant_id.empty()) azure["tenant_id"] = az.tenant_id;
  const json::object& platform = ObjectOrEmpty(p, "platform");
  CopyAll(platform, azure,
          {{"managedResourceGroup", "managed_resource_group_name"},
           {"subnetId", "subnet_resource_id"},
           {"vnetIntegrationSubnetId", "vnet_integration_subnet_resource_id"},
           {"networkSecurityGroupId", "network_security_group_resource_id"}});
  if (auto ot = GetString(platform, "outboundType")) {
    azure["nodes_outbound_connectivity"] = json::object{{"outbound_type", LowerAscii(*ot)}};
  }
  SetIfNotEmpty(azure, "operators_authentication",
                OperatorsAuthToCs(ObjectOrEmpty(platform, "operatorsAuthentication")));
  if (auto mi = GetString(ObjectOrEmpty(platform, "containerRegistry"), "managedIdentity")) {
    azure["container_registry"] = json::object{{"managed_identity", json::object{{"resource_id", *mi}}}};
  }
  SetIfNotEmpty(azure, "etcd_encryption", EtcdToCs(ObjectOrEmpty(p, "etcd")));
  if (!az.identity.empty()) {
    // The user-assigned identities' resource IDs; principal and client IDs stay with the RP.
    if (auto* uai = GetObject(az.identity, "userAssignedIdentities")) {
      json::array ids;
      for (const auto& [k, v] : *uai) ids.push_back(json::string(k));
      azure["user_assigned_identities"] = std::move(ids);
    }
  }
  out["azure"] = std::move(azure);

  SetIfNotEmpty(out, "version", VersionToCs(ObjectOrEmpty(p, "version")));
  const json::object& dns = ObjectOrEmpty(p, "dns");
  if (auto prefix = GetString(dns, "baseDomainPrefix"))
    out["dns"] = json::object{{"base_domain_prefix", *prefix}};
  SetIfNotEmpty(out, "network", NetworkToCs(ObjectOrEmpty(p, "network")));
  SetIfNotEmpty(out, "api", ApiToCs(ObjectOrEmpty(p, "api")));
  if (auto it = GetString(ObjectOrEmpty(p, "ingress"), "type")) {
    out["ingress"] =
        json::object{{"listening", EqualsIgnoreCase(*it, "Private") ? "internal" : LowerAscii(*it)}};
  }
  SetIfNotEmpty(out, "autoscaler", AutoscalerToCs(ObjectOrEmpty(p, "autoscaling")));
  if (auto st = GetString(ObjectOrEmpty(p, "clusterImageRegistry"), "state")) {
    out["image_registry"] = json::object{{"state", LowerAscii(*st)}};
  }
  if (auto* idm = GetArray(p, "imageDigestMirrors"))
    out["image_digest_mirrors"] = ImageDigestMirrorsToCs(*idm);
  Copy(p, "cryptoRestrictions", out, "crypto_restrictions");
  CopyDrainTimeout(p, out);
  return out;
}

Result<json::object> NodePoolToCs(const json::object& p, const AzureContext& az) {
  HCPRP_ASSIGN_OR_RETURN(auto id, ResourceIdOfKind(az, arm::ResourceKind::kNodePool, "a node pool"));
  json::object out = NodePoolMutableToCs(p);
  out["name"] = id.child_name;
  const json::object& platform = ObjectOrEmpty(p, "platform");
  json::object anp;
  anp["resource_name"] = id.child_name;
  Copy(platform, "vmSize", anp, "vm_size");
  if (auto eah = GetBool(platform, "enableEncryptionAtHost")) {
    anp["encryption_at_host"] = json::object{{"state", *eah ? "enabled" : "disabled"}};
  }
  const json::object& disk = ObjectOrEmpty(platform, "osDisk");
  if (!disk.empty()) {
    json::object d = Renamed(disk, {{"sizeGiB", "size_gibibytes"},
                                    {"diskStorageAccountType", "storage_account_type"},
                                    {"encryptionSetId", "sse_encryption_set_resource_id"}});
    if (auto dt = GetString(disk, "diskType"))
      d["persistence"] = EqualsIgnoreCase(*dt, "Ephemeral") ? "ephemeral" : "persistent";
    anp["os_disk"] = std::move(d);
  }
  out["azure_node_pool"] = std::move(anp);
  CopyAll(platform, out, {{"subnetId", "subnet_resource_id"}, {"availabilityZone", "availability_zone"}});
  return out;
}

Result<json::object> ExternalAuthToCs(const json::object& p, const AzureContext& az) {
  HCPRP_ASSIGN_OR_RETURN(auto id, ResourceIdOfKind(az, arm::ResourceKind::kExternalAuth, "an external auth"));
  json::object out = ExternalAuthBodyToCs(p);
  out["name"] = id.child_name;
  return out;
}

Result<json::object> ClusterPatchToCs(const json::object& p) {
  json::object out;
  ClusterMutableToCs(p, out);
  return out;
}

Result<json::object> NodePoolPatchToCs(const json::object& p) { return NodePoolMutableToCs(p); }

Result<json::object> ExternalAuthPatchToCs(const json::object& p) { return ExternalAuthBodyToCs(p); }

json::object ExperimentalPropertiesToCs(const json::object& experimental) {
  json::object out;
  if (GetString(experimental, api::kControlPlaneAvailability) ==
      std::optional<std::string_view>("SingleReplica"))
    out["hosted_cluster_single_replica"] = "true";
  if (GetString(experimental, api::kControlPlanePodSizing) == std::optional<std::string_view>("Minimal"))
    out["hosted_cluster_size_override"] = "e2e_minimal";
  if (auto image = GetString(experimental, api::kControlPlaneOperatorImage))
    out["control_plane_operator_image"] = *image;
  return out;
}

json::object ClusterReadOnlyFromCs(const json::object& cs) {
  json::object out;
  if (auto url = GetString(ObjectOrEmpty(cs, "api"), "url")) out["api"] = json::object{{"url", *url}};
  if (auto url = GetString(ObjectOrEmpty(cs, "console"), "url")) out["console"] = json::object{{"url", *url}};
  if (auto bd = GetString(ObjectOrEmpty(cs, "dns"), "base_domain"))
    out["dns"] = json::object{{"baseDomain", *bd}};
  if (auto iss = GetString(ObjectOrEmpty(cs, "azure"), "issuer_url")) {
    out["platform"] = json::object{{"issuerUrl", *iss}};
  }
  return out;
}

}  // namespace hcprp::clusterservice
