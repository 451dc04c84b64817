#include <gtest/gtest.h>

#include "arm/resource_id.h"
#include "clusterservice/convert.h"
#include "clusterservice/mapping.h"

namespace hcprp::clusterservice {
namespace {

json::object Obj(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok());
  return v->as_object();
}

const std::string kClusterId =
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/MyRG/providers/"
    "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/my-cluster";

TEST(Convert, Cluster) {
  auto props = Obj(R"({
    "provisioningState": "Accepted",
    "version": {"id": "4.19", "channelGroup": "stable"},
    "dns": {"baseDomainPrefix": "mycl"},
    "network": {"networkType": "OVNKubernetes", "podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16",
                "machineCidr": "10.0.0.0/16", "hostPrefix": 23},
    "api": {"visibility": "Private", "authorizedCidrs": ["1.2.3.0/24"]},
    "platform": {"managedResourceGroup": "mrg", "subnetId": "/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/virtualNetworks/v/subnets/s1",
                 "networkSecurityGroupId": "/nsg", "outboundType": "LoadBalancer",
                 "operatorsAuthentication": {"userAssignedIdentities": {
                    "controlPlaneOperators": {"cloud-controller-manager": "/uami/ccm"},
                    "dataPlaneOperators": {"disk-csi-driver": "/uami/disk"},
                    "serviceManagedIdentity": "/uami/smi"}}},
    "autoscaling": {"maxNodesTotal": 100, "maxNodeProvisionTimeSeconds": 900},
    "clusterImageRegistry": {"state": "Disabled"},
    "nodeDrainTimeoutMinutes": 30,
    "console": {"url": "https://read-only"}
  })");
  AzureContext az{kClusterId, "EastUS", "tenant-1",
                  Obj(R"({"type":"UserAssigned","userAssignedIdentities":{"/uami/ccm":{},"/uami/smi":{}}})")};
  auto cs = ClusterToCs(props, az);
  ASSERT_TRUE(cs.ok()) << cs.error().ToString();
  auto& o = *cs;
  EXPECT_EQ(*GetString(o, "name"), "my-cluster");
  EXPECT_EQ(*FindPointer(json::value(o), "/region/id"), "eastus");
  json::value v = o;
  EXPECT_EQ(*FindPointer(v, "/azure/subscription_id"), "00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(*FindPointer(v, "/azure/resource_group_name"), "MyRG");
  EXPECT_EQ(*FindPointer(v, "/azure/resource_name"), "my-cluster");
  EXPECT_EQ(*FindPointer(v, "/azure/tenant_id"), "tenant-1");
  EXPECT_EQ(*FindPointer(v, "/azure/managed_resource_group_name"), "mrg");
  EXPECT_EQ(*FindPointer(v, "/azure/network_security_group_resource_id"), "/nsg");
  EXPECT_EQ(*FindPointer(v, "/azure/nodes_outbound_connectivity/outbound_type"), "loadbalancer");
  EXPECT_EQ(
      *FindPointer(
          v,
          "/azure/operators_authentication/managed_identities/control_plane_operators_managed_identities/"
          "cloud-controller-manager/resource_id"),
      "/uami/ccm");
  EXPECT_EQ(*FindPointer(
                v, "/azure/operators_authentication/managed_identities/service_managed_identity/resource_id"),
            "/uami/smi");
  EXPECT_EQ(FindPointer(v, "/azure/user_assigned_identities")->as_array().size(), 2u);
  EXPECT_EQ(*FindPointer(v, "/version/id"), "openshift-v4.19");
  EXPECT_EQ(*FindPointer(v, "/version/channel_group"), "stable");
  EXPECT_EQ(*FindPointer(v, "/dns/base_domain_prefix"), "mycl");
  EXPECT_EQ(*FindPointer(v, "/network/type"), "OVNKubernetes");
  EXPECT_EQ(*FindPointer(v, "/network/host_prefix"), 23);
  EXPECT_EQ(*FindPointer(v, "/api/listening"), "internal");
  EXPECT_EQ(*FindPointer(v, "/api/cidr_block_access/allow/values/0"), "1.2.3.0/24");
  EXPECT_EQ(*FindPointer(v, "/autoscaler/resource_limits/max_nodes_total"), 100);
  EXPECT_EQ(*FindPointer(v, "/autoscaler/max_node_provision_time"), "900s");
  EXPECT_EQ(*FindPointer(v, "/image_registry/state"), "disabled");
  EXPECT_EQ(*FindPointer(v, "/node_drain_grace_period/value"), 30);
  // Read-only ARM fields never go to the Cluster Service.
  EXPECT_EQ(FindPointer(v, "/console"), nullptr);
  EXPECT_EQ(FindPointer(v, "/provisioning_state"), nullptr);

  EXPECT_FALSE(ClusterToCs(props, AzureContext{kClusterId + "/nodePools/x", "", "", {}}).ok());
}

TEST(Convert, NodePoolAndPatch) {
  auto props = Obj(R"({
    "version": {"id": "4.19.7", "channelGroup": "stable"},
    "platform": {"vmSize": "Standard_D8s_v3", "enableEncryptionAtHost": true, "availabilityZone": "2",
                 "subnetId": "/subnet", "osDisk": {"sizeGiB": 128, "diskStorageAccountType": "Premium_LRS", "diskType": "Ephemeral"}},
    "replicas": 3, "autoRepair": true,
    "autoScaling": {"min": 1, "max": 5},
    "labels": [{"key": "a", "value": "b"}],
    "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
    "nodeDrainTimeoutMinutes": 10
  })");
  auto cs = NodePoolToCs(props, AzureContext{kClusterId + "/nodePools/np1", "", "", {}});
  ASSERT_TRUE(cs.ok()) << cs.error().ToString();
  json::value v = *cs;
  EXPECT_EQ(*FindPointer(v, "/name"), "np1");
  EXPECT_EQ(*FindPointer(v, "/replicas"), 3);
  EXPECT_EQ(*FindPointer(v, "/auto_repair"), true);
  EXPECT_EQ(*FindPointer(v, "/autoscaling/min_replica"), 1);
  EXPECT_EQ(*FindPointer(v, "/autoscaling/max_replica"), 5);
  EXPECT_EQ(*FindPointer(v, "/labels/a"), "b");
  EXPECT_EQ(*FindPointer(v, "/taints/0/effect"), "NoSchedule");
  EXPECT_EQ(*FindPointer(v, "/azure_node_pool/vm_size"), "Standard_D8s_v3");
  EXPECT_EQ(*FindPointer(v, "/azure_node_pool/encryption_at_host/state"), "enabled");
  EXPECT_EQ(*FindPointer(v, "/azure_node_pool/os_disk/size_gibibytes"), 128);
  EXPECT_EQ(*FindPointer(v, "/azure_node_pool/os_disk/persistence"), "ephemeral");
  EXPECT_EQ(*FindPointer(v, "/subnet_resource_id"), "/subnet");
  EXPECT_EQ(*FindPointer(v, "/availability_zone"), "2");
  EXPECT_EQ(*FindPointer(v, "/version/id"), "openshift-v4.19.7");

  auto patch = NodePoolPatchToCs(Obj(R"({"replicas": 5, "platform": {"vmSize": "ignored"}})"));
  ASSERT_TRUE(patch.ok());
  EXPECT_EQ(ToJson(*patch), R"({"replicas":5})");
  auto cpatch =
      ClusterPatchToCs(Obj(R"({"version": {"id": "4.20"}, "api": {"authorizedCidrs": ["10.0.0.0/8"]}})"));
  ASSERT_TRUE(cpatch.ok());
  json::value cp = *cpatch;
  EXPECT_EQ(*FindPointer(cp, "/version/id"), "openshift-v4.20");
  EXPECT_EQ(*FindPointer(cp, "/api/cidr_block_access/allow/values/0"), "10.0.0.0/8");
}

TEST(Convert, ExternalAuth) {
  auto props = Obj(R"({
    "issuer": {"url": "https://login.example.com/v2.0", "audiences": ["aud"], "ca": "PEM"},
    "clients": [{"component": {"name": "console", "authClientNamespace": "openshift-console"},
                 "clientId": "cid", "extraScopes": ["email"], "type": "Confidential"}],
    "claim": {"mappings": {"username": {"claim": "email", "prefixPolicy": "NoPrefix"},
                           "groups": {"claim": "groups", "prefix": "oidc:"}},
              "validationRules": [{"type": "RequiredClaim", "requiredClaim": {"claim": "aud", "requiredValue": "x"}}]}
  })");
  auto cs = ExternalAuthToCs(props, AzureContext{kClusterId + "/externalAuths/ea1", "", "", {}});
  ASSERT_TRUE(cs.ok());
  json::value v = *cs;
  EXPECT_EQ(*FindPointer(v, "/name"), "ea1");
  EXPECT_EQ(*FindPointer(v, "/issuer/url"), "https://login.example.com/v2.0");
  EXPECT_EQ(*FindPointer(v, "/issuer/audiences/0"), "aud");
  EXPECT_EQ(*FindPointer(v, "/clients/0/component/namespace"), "openshift-console");
  EXPECT_EQ(*FindPointer(v, "/clients/0/id"), "cid");
  EXPECT_EQ(*FindPointer(v, "/clients/0/type"), "confidential");
  EXPECT_EQ(*FindPointer(v, "/claim/mappings/user_name/prefix_policy"), "NoPrefix");
  EXPECT_EQ(*FindPointer(v, "/claim/mappings/groups/prefix"), "oidc:");
  EXPECT_EQ(*FindPointer(v, "/claim/validation_rules/0/required_value"), "x");
}

TEST(Convert, ReadOnlyFromCs) {
  auto ro = ClusterReadOnlyFromCs(Obj(R"({"api":{"url":"https://api"},"console":{"url":"https://console"},
      "dns":{"base_domain":"x.example.com"},"azure":{"issuer_url":"https://oidc"}})"));
  EXPECT_EQ(
      ToJson(ro),
      R"({"api":{"url":"https://api"},"console":{"url":"https://console"},"dns":{"baseDomain":"x.example.com"},"platform":{"issuerUrl":"https://oidc"}})");
}

TEST(Convert, ExperimentalFeaturesReachTheClusterService) {
  EXPECT_EQ(
      json::value(ExperimentalPropertiesToCs(Obj(
          R"({"controlPlaneAvailability":"SingleReplica","controlPlanePodSizing":"Minimal",
                    "controlPlaneOperatorImage":"quay.io/cpo:1","createDeadlineSeconds":60})"))),
      json::value(Obj(R"({"hosted_cluster_single_replica":"true","hosted_cluster_size_override":"e2e_minimal",
                                "control_plane_operator_image":"quay.io/cpo:1"})")));
  EXPECT_TRUE(ExperimentalPropertiesToCs(json::object()).empty());

  // The create carries them and the exact version; an update always sends the whole map.
  api::Resource r{api::Kind::kCluster,
                  "eastus",
                  {},
                  std::nullopt,
                  Obj(R"({"version":{"id":"4.20","channelGroup":"stable"}})"),
                  {}};
  r.experimental = Obj(R"({"controlPlaneAvailability":"SingleReplica","controlPlaneExactVersion":"4.20.3"})");
  auto id = arm::ParseResourceId(kClusterId);
  ASSERT_TRUE(id.ok());
  json::object create = ClusterServiceCreateBody(*id, r);
  EXPECT_EQ(json::value(create.at("properties")),
            json::value(Obj(R"({"hosted_cluster_single_replica":"true"})")));
  EXPECT_EQ(create.at("version").at("id"), "openshift-v4.20.3");
  json::object update = ClusterServiceUpdateBody(*id, r);
  EXPECT_EQ(update.at("version").at("id"), "openshift-v4.20.3");
  r.experimental = {};
  update = ClusterServiceUpdateBody(*id, r);
  EXPECT_EQ(json::value(update.at("properties")), json::value(json::object()));
  EXPECT_EQ(update.at("version").at("id"), "openshift-v4.20");
  EXPECT_FALSE(ClusterServiceCreateBody(*id, r).contains("properties"));
}

}  // namespace
}  // namespace hcprp::clusterservice

namespace hcprp::clusterservice {
namespace {

json::object Json(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok());
  return v->as_object();
}

TEST(ObjectHoldsUpdate, EqualMembersAreHeldAndADifferentOneIsNot) {
  const json::object pool = Json(R"({"id": "p1", "replicas": 3, "auto_repair": true,
                                     "labels": {"a": "1", "b": "2"}, "status": {"state": "ready"}})");
  EXPECT_TRUE(ObjectHoldsUpdate(pool, Json(R"({"replicas": 3})")));
  EXPECT_TRUE(ObjectHoldsUpdate(pool, Json(R"({"replicas": 3, "labels": {"a": "1"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(pool, Json(R"({"replicas": 5})")));
  EXPECT_FALSE(ObjectHoldsUpdate(pool, Json(R"({"labels": {"a": "9"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(pool, Json(R"({"taints": [{"key": "k", "effect": "NoSchedule"}]})")));
  EXPECT_TRUE(ObjectHoldsUpdate(pool, json::object()));
}

TEST(ObjectHoldsUpdate, ANullIsHeldOnlyWhenTheMemberIsAbsent) {
  const json::object pool = Json(R"({"replicas": 3, "node_drain_grace_period": {"length": 5}})");
  EXPECT_TRUE(ObjectHoldsUpdate(pool, Json(R"({"autoscaling": null})")));
  EXPECT_FALSE(ObjectHoldsUpdate(pool, Json(R"({"node_drain_grace_period": null})")));
}

TEST(ObjectHoldsUpdate, AMinorOnlyVersionIsHeldByAnyReleaseOfThatMinor) {
  const json::object cluster =
      Json(R"({"version": {"id": "openshift-v4.20.3", "channel_group": "stable"}, "api": {}})");
  EXPECT_TRUE(ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.20"}})")));
  EXPECT_TRUE(ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.20.3"}})")));
  EXPECT_TRUE(ObjectHoldsUpdate(
      cluster, Json(R"({"version": {"id": "openshift-v4.20", "channel_group": "stable"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.2"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.21"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.20.4"}})")));
  EXPECT_FALSE(
      ObjectHoldsUpdate(cluster, Json(R"({"version": {"id": "openshift-v4.20", "channel_group": "fast"}})")));
}

TEST(ObjectHoldsUpdate, AClustersPropertiesAreComparedWhole) {
  const json::object with = Json(R"({"properties": {"a": "1", "b": "2"}})");
  EXPECT_TRUE(ObjectHoldsUpdate(with, Json(R"({"properties": {"a": "1", "b": "2"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(with, Json(R"({"properties": {"a": "1"}})")));
  EXPECT_FALSE(ObjectHoldsUpdate(with, Json(R"({"properties": {}})")));
  EXPECT_TRUE(ObjectHoldsUpdate(Json(R"({"id": "c"})"), Json(R"({"properties": {}})")));
  EXPECT_TRUE(ObjectHoldsUpdate(Json(R"({"properties": {}})"), Json(R"({"properties": {}})")));
}

TEST(ObjectHoldsUpdate, TheBodyOfAnUpdateIsHeldByTheObjectItMade) {
  // The frontend's patch for a node pool scaled to 5, against the object before and after it.
  const arm::ResourceId id = arm::ParseResourceId(kClusterId + "/nodePools/np1").value();
  api::Resource pool{api::Kind::kNodePool,
                     "eastus",
                     {},
                     std::nullopt,
                     Json(R"({"replicas": 5, "autoRepair": true})"),
                     {},
                     {}};
  const json::object patch = ClusterServiceUpdateBody(id, pool);
  json::object before = Json(R"({"id": "p1", "replicas": 3, "auto_repair": true})");
  EXPECT_FALSE(ObjectHoldsUpdate(before, patch));
  json::object after = before;
  for (const auto& [key, value] : patch) after[key] = value;
  EXPECT_TRUE(ObjectHoldsUpdate(after, patch));
}

}  // namespace
}  // namespace hcprp::clusterservice
