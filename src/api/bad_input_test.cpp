// Table-driven bad input: each case mutates a valid body and lists exactly the (target, code) pairs
// that must come back, all of them together.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "api/api.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Dump;
using testing::Erase;
using testing::Parse;
using testing::Set;

constexpr std::string_view kSmi =
    "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi";
constexpr std::string_view kCpIngress =
    "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ingress";
constexpr std::string_view kOther =
    "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/other";

json::value ValidCluster() {
  json::value v = Parse(R"({
    "location": "eastus",
    "tags": {"team": "blue"},
    "identity": {"type": "UserAssigned", "userAssignedIdentities": {}},
    "properties": {
      "version": {"id": "4.20", "channelGroup": "stable"},
      "dns": {"baseDomainPrefix": "demo"},
      "network": {"podCidr": "10.128.0.0/14", "serviceCidr": "172.30.0.0/16", "machineCidr": "10.0.0.0/16",
                  "hostPrefix": 23},
      "api": {"visibility": "Public", "authorizedCidrs": ["192.168.1.0/24"]},
      "platform": {
        "managedResourceGroup": "mrg",
        "subnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
        "vnetIntegrationSubnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/b",
        "networkSecurityGroupId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkSecurityGroups/n",
        "operatorsAuthentication": {"userAssignedIdentities": {
          "controlPlaneOperators": {}, "dataPlaneOperators": {}}}
      },
      "nodeDrainTimeoutMinutes": 30
    }})");
  // JSON pointer tokens would need escaping for resource IDs, so the maps are filled directly.
  json::object& ids = v.at("identity").at("userAssignedIdentities").as_object();
  ids[kSmi] = json::object();
  ids[kCpIngress] = json::object();
  json::object& uai = v.at("properties")
                          .at("platform")
                          .at("operatorsAuthentication")
                          .at("userAssignedIdentities")
                          .as_object();
  uai["serviceManagedIdentity"] = kSmi;
  uai["controlPlaneOperators"].as_object()["ingress"] = kCpIngress;
  return v;
}

json::value ValidNodePool() {
  return Parse(R"({
    "location": "eastus",
    "properties": {
      "version": {"id": "4.20.8", "channelGroup": "stable"},
      "platform": {"vmSize": "Standard_D4s_v3",
                   "subnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a"},
      "replicas": 3,
      "labels": [{"key": "team", "value": "blue"}],
      "taints": [{"key": "example.com/gpu", "value": "true", "effect": "NoSchedule"}]
    }})");
}

json::value ValidExternalAuth() {
  return Parse(R"({
    "properties": {
      "issuer": {"url": "https://login.example.com/tenant", "audiences": ["app-1", "app-2"]},
      "clients": [{"component": {"name": "console", "authClientNamespace": "openshift-console"},
                   "clientId": "app-1", "type": "Confidential"}],
      "claim": {"mappings": {"username": {"claim": "email", "prefixPolicy": "NoPrefix"},
                             "groups": {"claim": "groups"}}}
    }})");
}

json::value Nested(int depth) {
  json::value v = "leaf";
  for (int i = 0; i < depth; ++i) v = json::object{{"n", std::move(v)}};
  return v;
}

enum class Op { kCreate, kReplace, kPatch };

struct Expected {
  std::string target;
  std::string_view code;
};

struct BadCase {
  std::string name;
  Kind kind;
  Op op;
  std::function<void(json::value&)> mutate;  // applied to the valid body (create/replace) or to {} (patch)
  std::vector<Expected> expected;            // empty: the body must be accepted
  std::string_view version = kStableVersion;
  std::string resource_name;                 // checked when not empty
  std::optional<std::string> current_state;  // replace / patch
};

json::value ValidBody(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return ValidCluster();
    case Kind::kNodePool:
      return ValidNodePool();
    case Kind::kExternalAuth:
      return ValidExternalAuth();
  }
  return {};
}

constexpr auto kContent = kInvalidRequestContent;
constexpr auto kParam = kInvalidRequestContent;
constexpr auto kChange = kInvalidRequestContent;

std::vector<BadCase> Cases() {
  using V = json::value&;
  constexpr Kind kC = Kind::kCluster, kN = Kind::kNodePool, kE = Kind::kExternalAuth;
  const Op create = Op::kCreate, replace = Op::kReplace, patch = Op::kPatch;
  std::vector<BadCase> cases = {
      // --- wrong types, missing required, unknown properties -------------------------------------
      {"DrainTimeoutString",
       kC,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", "abc"); },
       {{"properties.nodeDrainTimeoutMinutes", kContent}}},
      {"DrainTimeoutTooLarge",
       kC,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", 10081); },
       {{"properties.nodeDrainTimeoutMinutes", kParam}}},
      {"DrainTimeoutNegative",
       kC,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", -1); },
       {{"properties.nodeDrainTimeoutMinutes", kParam}}},
      {"DrainTimeoutBeyondInt32",
       kC,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", int64_t{1} << 40); },
       {{"properties.nodeDrainTimeoutMinutes", kParam}}},
      {"DrainTimeoutFraction",
       kC,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", 1.5); },
       {{"properties.nodeDrainTimeoutMinutes", kContent}}},
      {"MissingPlatform",
       kC,
       create,
       [](V b) { Erase(b, "/properties/platform"); },
       // A required object left out is reported by its required members, as the real service does.
       {{"properties.platform.subnetId", kContent},
        {"properties.platform.networkSecurityGroupId", kContent},
        {"properties.platform.vnetIntegrationSubnetId", kContent}}},
      {"NullPlatform",
       kC,
       create,
       [](V b) { Set(b, "/properties/platform", nullptr); },
       {{"properties.platform", kContent}}},
      {"MissingLocation", kC, create, [](V b) { Erase(b, "/location"); }, {{"location", kContent}}},
      {"MissingVersion",
       kC,
       create,
       [](V b) { Erase(b, "/properties/version"); },
       {{"properties.version.id", kContent}}},
      {"MissingVersionId",
       kC,
       create,
       [](V b) { Erase(b, "/properties/version/id"); },
       {{"properties.version.id", kContent}}},
      {"MissingSubnet",
       kC,
       create,
       [](V b) { Erase(b, "/properties/platform/subnetId"); },
       {{"properties.platform.subnetId", kContent}}},
      {"UnknownProperty",
       kC,
       create,
       [](V b) { Set(b, "/properties/colour", "red"); },
       {{"properties.colour", kContent}}},
      {"MisspelledPodCidr",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/podCIDR", "10.128.0.0/14"); },
       {{"properties.network.podCIDR", kContent}}},
      {"PropertiesNotObject",
       kC,
       create,
       [](V b) {
         Set(b, "/properties", json::array{1, 2});
       },
       {{"properties", kContent}}},
      {"BodyIsArray", kC, create, [](V b) { b = json::array{}; }, {{"", kContent}}},
      {"TagNotString", kC, create, [](V b) { Set(b, "/tags/foo", 5); }, {{"tags[foo]", kContent}}},
      {"TagsNotObject", kC, create, [](V b) { Set(b, "/tags", "x"); }, {{"tags", kContent}}},
      // --- enums ---------------------------------------------------------------------------------
      {"UnknownNetworkType",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/networkType", "Calico"); },
       {{"properties.network.networkType", kParam}}},
      {"EnumIsCaseSensitive",
       kC,
       create,
       [](V b) { Set(b, "/properties/api/visibility", "public"); },
       {{"properties.api.visibility", kParam}}},
      {"UnknownCryptoRestriction",
       kC,
       create,
       [](V b) { Set(b, "/properties/cryptoRestrictions", "FIPS140"); },
       {{"properties.cryptoRestrictions", kParam}}},
      {"UnknownRegistryState",
       kC,
       create,
       [](V b) { Set(b, "/properties/clusterImageRegistry/state", "On"); },
       {{"properties.clusterImageRegistry.state", kParam}}},
      {"UnknownIdentityType",
       kC,
       create,
       [](V b) { Set(b, "/identity/type", "Bogus"); },
       {{"identity.type", kParam}}},
      {"PlatformManagedEtcdNotInStable",
       kC,
       create,
       [](V b) { Set(b, "/properties/etcd/dataEncryption/keyManagementMode", "PlatformManaged"); },
       {{"properties.etcd.dataEncryption.keyManagementMode", kParam}}},
      // --- patterns, lengths, items, formats -----------------------------------------------------
      {"BaseDomainPrefixPattern",
       kC,
       create,
       [](V b) { Set(b, "/properties/dns/baseDomainPrefix", "Bad_Prefix"); },
       {{"properties.dns.baseDomainPrefix", kParam}}},
      {"BaseDomainPrefixTooLong",
       kC,
       create,
       [](V b) { Set(b, "/properties/dns/baseDomainPrefix", "abcdefghijklmnop"); },
       {{"properties.dns.baseDomainPrefix", kParam}}},
      {"HugeBaseDomainPrefix",
       kC,
       create,
       [](V b) { Set(b, "/properties/dns/baseDomainPrefix", json::string(std::string(1 << 20, 'a'))); },
       {{"properties.dns.baseDomainPrefix", kParam}}},
      {"HugeVersionId",
       kC,
       create,
       [](V b) { Set(b, "/properties/version/id", json::string(std::string(100000, '4'))); },
       {{"properties.version.id", kParam}}},
      {"TooManyAuthorizedCidrs",
       kC,
       create,
       [](V b) {
         json::array a;
         for (int i = 0; i < 501; ++i) {
           a.push_back(
               json::string("10." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ".0/24"));
         }
         Set(b, "/properties/api/authorizedCidrs", std::move(a));
       },
       {{"properties.api.authorizedCidrs", kParam}}},
      {"EmptyMirrorList",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/imageDigestMirrors",
             json::array{json::object{{"source", "a.io/x"}, {"mirrors", json::array{}}}});
       },
       {{"properties.imageDigestMirrors[0].mirrors", kParam}}},
      {"NegativeMaxNodesTotal",
       kC,
       create,
       [](V b) { Set(b, "/properties/autoscaling/maxNodesTotal", -1); },
       {{"properties.autoscaling.maxNodesTotal", kParam}}},
      {"SubnetNotAnId",
       kC,
       create,
       [](V b) { Set(b, "/properties/platform/subnetId", "not-an-id"); },
       {{"properties.platform.subnetID", kParam}}},  // as the real service names a malformed ID
      {"SubnetIsAnNsg",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/platform/subnetId",
             "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkSecurityGroups/n");
       },
       {{"properties.platform.subnetId", kParam}}},
      {"KmsMissingVisibility",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/etcd/dataEncryption",
             Parse(R"({"keyManagementMode": "CustomerManaged", "customerManaged": {"encryptionType": "KMS",
                      "kms": {"vaultName": "v", "activeKey": {"name": "k", "version": "1"}}}})"));
       },
       {{"properties.etcd.dataEncryption.customerManaged.kms.visibility", kContent}}},
      // --- network semantics ---------------------------------------------------------------------
      {"PodCidrNoPrefix",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/podCidr", "10.128.0.0"); },
       {{"properties.network.podCidr", kParam}}},
      {"PodCidrHostBits",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/podCidr", "10.128.0.1/14"); },
       {{"properties.network.podCidr", kParam}}},
      {"ServiceCidrBadOctet",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/serviceCidr", "300.1.0.0/16"); },
       {{"properties.network.serviceCidr", kParam}}},
      {"MachineCidrIpv6",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/machineCidr", "fd00::/48"); },
       {{"properties.network.machineCidr", kParam}}},
      {"MachineOverlapsPod",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/machineCidr", "10.128.0.0/16"); },
       {{"properties.network", kContent}}},
      {"TwoOverlaps",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/serviceCidr", "10.0.0.0/8"); },
       {{"properties.network", kContent}, {"properties.network", kContent}}},
      {"HostPrefix22",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/hostPrefix", 22); },
       {{"properties.network.hostPrefix", kParam}}},
      {"HostPrefix27",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/hostPrefix", 27); },
       {{"properties.network.hostPrefix", kParam}}},
      {"HostPrefixString",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/hostPrefix", "23"); },
       {{"properties.network.hostPrefix", kContent}}},
      {"HostPrefixNotLongerThanPodCidr",
       kC,
       create,
       [](V b) { Set(b, "/properties/network/podCidr", "10.128.0.0/24"); },
       {}},
      {"AuthorizedCidrJunk",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/api/authorizedCidrs", json::array{"1.2.3.4", "nope"});
       },
       {{"properties.api.authorizedCidrs[1]", kContent}, {"properties.api.authorizedCidrs[1]", kContent}}},
      {"VersionMajorOnly",
       kC,
       create,
       [](V b) { Set(b, "/properties/version/id", "4"); },
       {{"properties.version.id", kParam}}},
      {"ClusterVersionWithPatch",
       kC,
       create,
       [](V b) { Set(b, "/properties/version/id", "4.19.1"); },
       {{"properties.version.id", kContent}, {"properties.version.id", kContent}}},
      {"EtcdCustomerManagedWithoutDetails",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/etcd/dataEncryption", json::object{{"keyManagementMode", "CustomerManaged"}});
       },
       {{"properties.etcd.dataEncryption.customerManaged", kParam}}},
      // --- identities ----------------------------------------------------------------------------
      {"ServiceIdentityNotAssigned",
       kC,
       create,
       [](V b) {
         b.at("properties")
             .at("platform")
             .at("operatorsAuthentication")
             .at("userAssignedIdentities")
             .as_object()["serviceManagedIdentity"] = kOther;
       },
       {{"identity.userAssignedIdentities[/subscriptions/s/resourceGroups/g/providers/"
         "Microsoft.ManagedIdentity/userAssignedIdentities/smi]",
         kContent},
        {"properties.platform.operatorsAuthentication.userAssignedIdentities.serviceManagedIdentity",
         kContent}}},
      {"DataPlaneIdentityNotAssigned",
       kC,
       create,
       [](V b) {
         b.at("properties")
             .at("platform")
             .at("operatorsAuthentication")
             .at("userAssignedIdentities")
             .at("dataPlaneOperators")
             .as_object()["disk"] = kOther;
       },
       {}},
      {"IdentityUsedTwiceIgnoringCase",
       kC,
       create,
       [](V b) {
         std::string upper = ToLower(kCpIngress);
         std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
         b.at("properties")
             .at("platform")
             .at("operatorsAuthentication")
             .at("userAssignedIdentities")
             .as_object()["serviceManagedIdentity"] = upper;
       },
       {{"identity.userAssignedIdentities[/subscriptions/s/resourceGroups/g/providers/"
         "Microsoft.ManagedIdentity/userAssignedIdentities/ingress]",
         kContent},
        {"identity.userAssignedIdentities[/subscriptions/s/resourceGroups/g/providers/"
         "Microsoft.ManagedIdentity/userAssignedIdentities/smi]",
         kContent},
        {"properties.platform.operatorsAuthentication.userAssignedIdentities.serviceManagedIdentity",
         kContent}}},
      {"IdentityMissingEntirely",
       kC,
       create,
       [](V b) { b.as_object().erase("identity"); },
       {{"properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators[ingress]",
         kContent},
        {"properties.platform.operatorsAuthentication.userAssignedIdentities.serviceManagedIdentity",
         kContent}}},
      {"IdentityKeyNotAnIdentityId",
       kC,
       create,
       [](V b) {
         b.at("identity").at("userAssignedIdentities").as_object()["/subscriptions/x"] = json::object();
       },
       {{"identity.userAssignedIdentities[/subscriptions/x]", kContent},
        {"identity.userAssignedIdentities[/subscriptions/x]", kContent},
        {"identity.userAssignedIdentities[/subscriptions/x]", kContent}}},
      {"UserIdentitiesWithSystemAssignedType",
       kC,
       create,
       [](V b) { Set(b, "/identity/type", "SystemAssigned"); },
       {}},
      // --- names ---------------------------------------------------------------------------------
      {"ClusterNameStartsWithDigit", kC, create, [](V) {}, {{"id", kContent}}, kStableVersion, "1cluster"},
      {"ClusterNameTooLong",
       kC,
       create,
       [](V) {},
       {{"id", kContent}, {"id", kContent}},
       kStableVersion,
       std::string(55, 'a')},
      {"NodePoolNameTooLong",
       kN,
       create,
       [](V) {},
       {{"id", kContent}, {"id", kContent}},
       kStableVersion,
       "abcdefghijklmnop"},
      {"ExternalAuthNameLeadingDash", kE, create, [](V) {}, {{"id", kContent}}, kStableVersion, "-x"},
      // --- deeply nested junk --------------------------------------------------------------------
      {"NestedJunkUnknownProperty",
       kC,
       create,
       [](V b) { Set(b, "/properties/autoscaling/junk", Nested(60)); },
       {{"properties.autoscaling.junk", kContent}}},
      {"NestedJunkInTag",
       kC,
       create,
       [](V b) { Set(b, "/tags/deep", Nested(60)); },
       {{"tags[deep]", kContent}}},
      // --- several problems at once --------------------------------------------------------------
      {"ThreeProblemsTogether",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/network/hostPrefix", 27);
         Set(b, "/properties/network/networkType", "Calico");
         Set(b, "/properties/bogus", true);
       },
       {{"properties.network.hostPrefix", kParam},
        {"properties.network.networkType", kParam},
        {"properties.bogus", kContent}}},
      // --- read-only input is ignored ------------------------------------------------------------
      {"ReadOnlyIgnoredOnCreate",
       kC,
       create,
       [](V b) {
         Set(b, "/properties/console", json::object{{"url", 42}});  // even of the wrong type
         Set(b, "/properties/provisioningState", "Failed");
         Set(b, "/properties/platform/issuerUrl", "https://issuer.example.com");
         Set(b, "/id",
             "/subscriptions/s/resourceGroups/g/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c");
         Set(b, "/systemData", json::object{{"createdBy", "someone"}});
       },
       {{"properties.provisioningState", kContent}}},
      // --- replace: create-only fields, provisioningState ----------------------------------------
      {"ReplaceChangesPodCidr",
       kC,
       replace,
       [](V b) { Set(b, "/properties/network/podCidr", "10.132.0.0/14"); },
       {{"properties.network.podCidr", kChange}, {"properties.network", kChange}}},
      {"ReplaceChangesLocation",
       kC,
       replace,
       [](V b) { Set(b, "/location", "westus"); },
       {{"location", kChange}}},
      {"ReplaceLocationCaseOnly", kC, replace, [](V b) { Set(b, "/location", "EastUS"); }, {}},
      {"ReplaceChangesBaseDomainPrefix",
       kC,
       replace,
       [](V b) { Set(b, "/properties/dns/baseDomainPrefix", "other"); },
       {{"properties.dns.baseDomainPrefix", kChange}}},
      {"ReplaceChangesVisibility",
       kC,
       replace,
       [](V b) { Set(b, "/properties/api/visibility", "Private"); },
       {{"properties.api.visibility", kChange}}},
      {"ReplaceChangesChannelGroup",
       kC,
       replace,
       [](V b) { Set(b, "/properties/version/channelGroup", "fast"); },
       {}},
      {"ReplaceOmitsCreateOnlyNetwork", kC, replace, [](V b) { Erase(b, "/properties/network"); }, {}},
      {"ReplaceUpdatesDrainTimeout",
       kC,
       replace,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", 60); },
       {}},
      {"ProvisioningStateMismatch",
       kC,
       replace,
       [](V b) { Set(b, "/properties/provisioningState", "Failed"); },
       {{"properties.provisioningState", kParam}},
       kStableVersion,
       "",
       "Succeeded"},
      {"ProvisioningStateMatches",
       kC,
       replace,
       [](V b) { Set(b, "/properties/provisioningState", "Succeeded"); },
       {},
       kStableVersion,
       "",
       "Succeeded"},
      {"NodePoolReplaceChangesVmSize",
       kN,
       replace,
       [](V b) { Set(b, "/properties/platform/vmSize", "Standard_D8s_v3"); },
       {{"properties.platform", kContent}, {"properties.platform.vmSize", kContent}}},
      // The real service reports the changed disk block and the platform around it besides the field.
      {"NodePoolReplaceChangesOsDisk",
       kN,
       replace,
       [](V b) { Set(b, "/properties/platform/osDisk", Parse(R"({"sizeGiB": 128})")); },
       {{"properties.platform.osDisk.sizeGiB", kChange},
        {"properties.platform", kChange},
        {"properties.platform.osDisk", kChange}}},
      // An immutable field changed to an illegal value: both problems (Cluster/update-to-illegal-value).
      {"ReplaceChangesHostPrefixToIllegalValue",
       kC,
       replace,
       [](V b) { Set(b, "/properties/network/hostPrefix", 30); },
       {{"properties.network.hostPrefix", kChange},
        {"properties.network.hostPrefix", kParam},
        {"properties.network", kChange}}},
      {"NodePoolReplaceChangesAutoRepair",
       kN,
       replace,
       [](V b) { Set(b, "/properties/autoRepair", false); },
       {{"properties.autoRepair", kChange}}},
      // --- patch -----------------------------------------------------------------------------------
      {"PatchCreateOnlyNetwork",
       kC,
       patch,
       [](V b) { Set(b, "/properties/network/hostPrefix", 24); },
       {{"properties.network", kContent}}},
      {"PatchLocation", kC, patch, [](V b) { Set(b, "/location", "westus"); }, {{"location", kContent}}},
      {"PatchWrongType",
       kC,
       patch,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", "x"); },
       {{"properties.nodeDrainTimeoutMinutes", kContent}}},
      {"PatchRemovesRequiredVersion",
       kC,
       patch,
       [](V b) { Set(b, "/properties/version", nullptr); },
       {{"properties.version.id", kContent}}},
      {"PatchUnassignedServiceIdentity",
       kC,
       patch,
       [](V b) {
         Set(b, "/properties/platform/operatorsAuthentication/userAssignedIdentities/serviceManagedIdentity",
             json::string(kOther));
       },
       {{"identity.userAssignedIdentities[/subscriptions/s/resourceGroups/g/providers/"
         "Microsoft.ManagedIdentity/userAssignedIdentities/smi]",
         kContent},
        {"properties.platform", kContent},
        {"properties.platform.operatorsAuthentication.userAssignedIdentities.serviceManagedIdentity",
         kContent}}},
      {"PatchProvisioningStateMismatch",
       kC,
       patch,
       [](V b) { Set(b, "/properties/provisioningState", "Deleting"); },
       {{"properties.provisioningState", kParam}},
       kStableVersion,
       "",
       "Succeeded"},
      {"PatchNodePoolMinAboveMax",
       kN,
       patch,
       [](V b) {
         Set(b, "/properties/replicas", nullptr);
         Set(b, "/properties/autoScaling", json::object{{"min", 5}, {"max", 2}});
       },
       {{"properties.autoScaling.max", kParam}}},
      {"PatchNodePoolAutoScalingWithReplicas",
       kN,
       patch,
       [](V b) {
         Set(b, "/properties/autoScaling", json::object{{"min", 1}, {"max", 2}});
       },
       {{"properties.replicas", kContent}}},
      // --- node pools ------------------------------------------------------------------------------
      {"ReplicasWithAutoScaling",
       kN,
       create,
       [](V b) {
         Set(b, "/properties/autoScaling", json::object{{"min", 1}, {"max", 3}});
       },
       {{"properties.replicas", kContent}}},
      {"AutoScalingMinAboveMax",
       kN,
       create,
       [](V b) {
         Erase(b, "/properties/replicas");
         Set(b, "/properties/autoScaling", json::object{{"min", 4}, {"max", 3}});
       },
       {{"properties.autoScaling.max", kParam}}},
      {"NegativeReplicas",
       kN,
       create,
       [](V b) { Set(b, "/properties/replicas", -1); },
       {{"properties.replicas", kParam}}},
      {"TooManyReplicasWithoutZone",
       kN,
       create,
       [](V b) { Set(b, "/properties/replicas", 201); },
       {{"properties.replicas", kParam}}},
      {"ManyReplicasWithZone",
       kN,
       create,
       [](V b) {
         Set(b, "/properties/replicas", 500);
         Set(b, "/properties/platform/availabilityZone", "1");
       },
       {}},
      {"ReservedLabelKubernetesIo",
       kN,
       create,
       [](V b) { Set(b, "/properties/labels/0/key", "kubernetes.io/role"); },
       {}},
      {"ReservedLabelSubdomain",
       kN,
       create,
       [](V b) { Set(b, "/properties/labels/0/key", "node-role.kubernetes.io/worker"); },
       {{"properties.labels[node-role.kubernetes.io/worker]", kContent}}},
      {"ReservedLabelK8sIo", kN, create, [](V b) { Set(b, "/properties/labels/0/key", "k8s.io/x"); }, {}},
      {"ReservedLabelOpenshiftIo",
       kN,
       create,
       [](V b) { Set(b, "/properties/labels/0/key", "openshift.io/x"); },
       {}},
      {"LabelKeyWithSpace",
       kN,
       create,
       [](V b) { Set(b, "/properties/labels/0/key", "bad key"); },
       {{"properties.labels", kContent}}},
      {"LabelValueTooLong",
       kN,
       create,
       [](V b) { Set(b, "/properties/labels/0/value", json::string(std::string(64, 'v'))); },
       {{"properties.labels[team]", kContent}}},
      {"DuplicateLabelKey",
       kN,
       create,
       [](V b) {
         b.at("properties").at("labels").as_array().push_back(json::object{{"key", "team"}});
       },
       {}},
      {"LabelWithoutKey",
       kN,
       create,
       [](V b) { Erase(b, "/properties/labels/0/key"); },
       {{"properties.labels[0].key", kContent}}},
      {"BadTaintEffect",
       kN,
       create,
       [](V b) { Set(b, "/properties/taints/0/effect", "NoWay"); },
       {{"properties.taints[0].effect", kParam}}},
      {"TaintWithoutEffect",
       kN,
       create,
       [](V b) { Erase(b, "/properties/taints/0/effect"); },
       {{"properties.taints[0].effect", kContent}}},
      {"EmptyTaintKey",
       kN,
       create,
       [](V b) { Set(b, "/properties/taints/0/key", ""); },
       {{"properties.taints[0].key", kContent}}},
      {"DuplicateTaint",
       kN,
       create,
       [](V b) {
         b.at("properties")
             .at("taints")
             .as_array()
             .push_back(json::object{{"key", "example.com/gpu"}, {"effect", "NoSchedule"}});
       },
       {}},
      {"OsDiskTooSmall",
       kN,
       create,
       [](V b) { Set(b, "/properties/platform/osDisk/sizeGiB", 32); },
       {{"properties.platform.osDisk.sizeGiB", kParam}}},
      {"OsDiskUnknownType",
       kN,
       create,
       [](V b) { Set(b, "/properties/platform/osDisk/diskStorageAccountType", "Ultra"); },
       {{"properties.platform.osDisk.diskStorageAccountType", kParam}}},
      {"NodePoolMissingVmSize",
       kN,
       create,
       [](V b) { Erase(b, "/properties/platform/vmSize"); },
       {{"properties.platform.vmSize", kContent}}},
      {"NodePoolBadVersion",
       kN,
       create,
       [](V b) { Set(b, "/properties/version/id", "4.x"); },
       {{"properties.version.id", kContent}, {"properties.version.id", kContent}}},
      {"NodePoolDrainTimeoutTooLarge",
       kN,
       create,
       [](V b) { Set(b, "/properties/nodeDrainTimeoutMinutes", 20000); },
       {{"properties.nodeDrainTimeoutMinutes", kContent}}},
      {"PreviewNodePoolBadTaint",
       kN,
       create,
       [](V b) { Set(b, "/properties/taints/0/effect", "Evict"); },
       {{"properties.taints[0].effect", kParam}},
       kFirstPreview},
      {"PreviewNodePoolDiskTypeUnknownInPreview",
       kN,
       create,
       [](V b) { Set(b, "/properties/platform/osDisk/diskType", "Managed"); },
       {{"properties.platform.osDisk.diskType", kContent}},
       kFirstPreview},
      // --- external auths --------------------------------------------------------------------------
      {"IssuerNotHttps",
       kE,
       create,
       [](V b) { Set(b, "/properties/issuer/url", "http://login.example.com"); },
       {{"properties.issuer.url", kParam}}},
      {"NoAudiences",
       kE,
       create,
       [](V b) { Set(b, "/properties/issuer/audiences", json::array{}); },
       {{"properties.issuer.audiences", kParam}, {"properties.clients[0].clientId", kParam}}},
      {"ClientIdNotAnAudience",
       kE,
       create,
       [](V b) { Set(b, "/properties/clients/0/clientId", "app-9"); },
       {{"properties.clients[0].clientId", kParam}}},
      {"PrefixPolicyWithoutPrefix",
       kE,
       create,
       [](V b) { Set(b, "/properties/claim/mappings/username/prefixPolicy", "Prefix"); },
       {{"properties.claim.mappings.username.prefix", kParam}}},
      {"PrefixWithoutPrefixPolicy",
       kE,
       create,
       [](V b) { Set(b, "/properties/claim/mappings/username/prefix", "oidc:"); },
       {{"properties.claim.mappings.username.prefix", kParam}}},
      {"UnknownPrefixPolicy",
       kE,
       create,
       [](V b) { Set(b, "/properties/claim/mappings/username/prefixPolicy", "Sometimes"); },
       {{"properties.claim.mappings.username.prefixPolicy", kParam}}},
      {"MissingClaim",
       kE,
       create,
       [](V b) { Erase(b, "/properties/claim"); },
       {{"properties.claim.mappings.username.claim", kContent}}},
      {"UnknownClientType",
       kE,
       create,
       [](V b) { Set(b, "/properties/clients/0/type", "Private"); },
       {{"properties.clients[0].type", kParam}}},
      {"DuplicateClientComponent",
       kE,
       create,
       [](V b) {
         json::value copy = b.at("properties").at("clients").at(0);
         b.at("properties").at("clients").as_array().push_back(copy);
       },
       {{"properties.clients[1]", kContent}}},
      {"ExternalAuthLocationIsUnknown",
       kE,
       create,
       [](V b) { Set(b, "/location", "eastus"); },
       {{"location", kContent}}},
  };
  return cases;
}

json::value BodyFor(const BadCase& c) {
  json::value body = c.op == Op::kPatch ? json::value(json::object()) : ValidBody(c.kind);
  c.mutate(body);
  return body;
}

class BadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInputTest, ReportsExactlyTheExpectedErrors) {
  const BadCase& c = GetParam();
  DecodeOptions options;
  options.name = c.resource_name;
  options.current_provisioning_state = c.current_state;
  json::value body = BodyFor(c);
  Validated<Resource> result;
  if (c.op == Op::kCreate) {
    result = DecodeCreate(c.version, c.kind, body, options);
  } else {
    auto existing = DecodeCreate(c.version, c.kind, ValidBody(c.kind));
    ASSERT_TRUE(std::holds_alternative<Resource>(existing)) << Dump(existing);
    const Resource& before = std::get<Resource>(existing);
    result = c.op == Op::kReplace ? DecodeReplace(c.version, c.kind, body, before, options)
                                  : DecodePatch(c.version, c.kind, body, before, options);
  }
  std::vector<std::pair<std::string, std::string>> got, want;
  if (const auto* errors = std::get_if<ValidationErrors>(&result)) {
    for (const auto& e : errors->errors) {
      got.emplace_back(e.target, e.code);
      EXPECT_FALSE(e.message.empty()) << e.target;
      EXPECT_LT(e.message.size(), 1024u) << "messages quote values briefly";
    }
  }
  for (const auto& e : c.expected) want.emplace_back(e.target, std::string(e.code));
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want) << Dump(result);
}

INSTANTIATE_TEST_SUITE_P(Table, BadInputTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           return param_info.param.name;
                         });

TEST(BadInput, TableIsLargeEnough) {
  size_t failing = 0;
  for (const auto& c : Cases()) failing += c.expected.empty() ? 0 : 1;
  EXPECT_GE(failing, 60u);
}

TEST(BadInput, ReadOnlyInputIsNotStored) {
  json::value body = ValidCluster();
  Set(body, "/properties/console", json::object{{"url", "https://x"}});
  auto r = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(r)) << Dump(r);
  EXPECT_FALSE(std::get<Resource>(r).properties.contains("console"));
  EXPECT_FALSE(std::get<Resource>(r).properties.contains("provisioningState"));
}

TEST(BadInput, ProvisioningStateOnCreateIsRefused) {
  json::value body = ValidCluster();
  Set(body, "/properties/provisioningState", "Succeeded");
  auto r = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(r)) << Dump(r);
  const auto& errors = std::get<ValidationErrors>(r).errors;
  ASSERT_EQ(errors.size(), 1u) << Dump(r);
  EXPECT_EQ(errors[0].target, "properties.provisioningState");
  EXPECT_EQ(errors[0].code, kInvalidRequestContent);
}

// One external auth a cluster: with another one on the cluster a create is refused at "name" after
// the body's own problems; a replace and a patch are not.
TEST(BadInput, OtherExternalAuthRefusesOnlyACreate) {
  DecodeOptions others;
  others.other_external_auths = true;
  auto alone = DecodeCreate(kStableVersion, Kind::kExternalAuth, ValidExternalAuth());
  ASSERT_TRUE(std::holds_alternative<Resource>(alone)) << Dump(alone);
  auto refused = DecodeCreate(kStableVersion, Kind::kExternalAuth, ValidExternalAuth(), others);
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(refused)) << Dump(refused);
  const auto& errors = std::get<ValidationErrors>(refused).errors;
  ASSERT_EQ(errors.size(), 1u) << Dump(refused);
  EXPECT_EQ(errors[0].code, kInvalidRequestContent);
  EXPECT_EQ(errors[0].target, "name");
  EXPECT_EQ(errors[0].message,
            "Forbidden: There are other external auths on the cluster. Only one external auth is allowed per "
            "cluster.");
  json::value bad = ValidExternalAuth();
  Set(bad, "/properties/issuer/url", "http://issuer.example.com");
  auto both = DecodeCreate(kStableVersion, Kind::kExternalAuth, bad, others);
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(both)) << Dump(both);
  ASSERT_EQ(std::get<ValidationErrors>(both).errors.size(), 2u) << Dump(both);
  EXPECT_EQ(std::get<ValidationErrors>(both).errors.back().target, "name");
  const Resource& existing = std::get<Resource>(alone);
  auto replaced = DecodeReplace(kStableVersion, Kind::kExternalAuth, ValidExternalAuth(), existing, others);
  EXPECT_TRUE(std::holds_alternative<Resource>(replaced)) << Dump(replaced);
  auto patched =
      DecodePatch(kStableVersion, Kind::kExternalAuth,
                  Parse(R"({"properties":{"issuer":{"audiences":["app-1","app-3"]}}})"), existing, others);
  EXPECT_TRUE(std::holds_alternative<Resource>(patched)) << Dump(patched);
}

// A body naming another resource than its URL is refused for that alone (the real service's
// NodePool/invalid-name-too-long-name); the URL's own name, or none, is accepted.
TEST(BadInput, BodyNameOtherThanTheUrlsIsRefusedAlone) {
  DecodeOptions options;
  options.name = "basic";
  options.resource_id =
      "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/"
      "hcpOpenShiftClusters/c/nodePools/basic";
  json::value body = ValidNodePool();
  Set(body, "/name", "other pool");
  Set(body, "/properties/replicas", -1);
  auto refused = DecodeCreate(kStableVersion, Kind::kNodePool, body, options);
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(refused)) << Dump(refused);
  const auto& errors = std::get<ValidationErrors>(refused).errors;
  ASSERT_EQ(errors.size(), 1u) << Dump(refused);
  EXPECT_EQ(errors[0].code, kInvalidRequestContent);
  EXPECT_EQ(errors[0].target, "name");
  EXPECT_EQ(errors[0].message,
            "Invalid value: \"other pool\": name must match resourceID path: " + options.resource_id);
  json::value same = ValidNodePool();
  Set(same, "/name", "basic");
  EXPECT_TRUE(std::holds_alternative<Resource>(DecodeCreate(kStableVersion, Kind::kNodePool, same, options)));
}

// A node pool DELETE is refused exactly when no other live node pool would be left.
TEST(BadInput, NodePoolDeleteRefusedOnlyForTheLast) {
  const std::vector<FieldError> refused = CheckNodePoolDelete(0).errors;
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].code, kInvalidRequestContent);
  EXPECT_EQ(refused[0].target, "name");
  EXPECT_EQ(refused[0].message, "Forbidden: The last node pool can not be deleted from a cluster.");
  EXPECT_TRUE(CheckNodePoolDelete(1).errors.empty());
  EXPECT_TRUE(CheckNodePoolDelete(5).errors.empty());
}

TEST(BadInput, ReplaceOmittingCreateOnlyKeepsExistingValue) {
  json::value body = ValidCluster();
  Set(body, "/properties/network/podCidr", "10.132.0.0/14");
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
  json::value replace = ValidCluster();
  Erase(replace, "/properties/network");
  auto replaced = DecodeReplace(kStableVersion, Kind::kCluster, replace, std::get<Resource>(created));
  ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << Dump(replaced);
  EXPECT_EQ(std::get<Resource>(replaced).properties.at("network").at("podCidr"), "10.132.0.0/14");
}

// A replace without tags keeps them (the real service's Cluster/replace-with-tags-with-nil); empty tags
// clear them (replace-with-tags-with-empty).
TEST(BadInput, ReplaceOmittingTagsKeepsThem) {
  json::value body = ValidCluster();
  Set(body, "/tags", Parse(R"({"one":"apple"})"));
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
  json::value without = ValidCluster();
  Erase(without, "/tags");
  auto kept = DecodeReplace(kStableVersion, Kind::kCluster, without, std::get<Resource>(created));
  ASSERT_TRUE(std::holds_alternative<Resource>(kept)) << Dump(kept);
  EXPECT_EQ(json::value(std::get<Resource>(kept).tags), Parse(R"({"one":"apple"})"));
  json::value empty = ValidCluster();
  Set(empty, "/tags", json::object());
  auto cleared = DecodeReplace(kStableVersion, Kind::kCluster, empty, std::get<Resource>(created));
  ASSERT_TRUE(std::holds_alternative<Resource>(cleared)) << Dump(cleared);
  EXPECT_TRUE(std::get<Resource>(cleared).tags.empty());
}

// A PATCH null for a property the real service checks for null is refused in its words, whether or not
// the version's update schema names the property (Cluster/v2025-required-fields-null-patch).
TEST(BadInput, PatchNullForANullCheckedPropertyIsRequired) {
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, ValidCluster());
  ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
  for (std::string_view version : {kStableVersion, std::string_view("2025-12-23-preview")}) {
    auto patched = DecodePatch(version, Kind::kCluster,
                               Parse(R"({"properties":{"platform":{"vnetIntegrationSubnetId":null}}})"),
                               std::get<Resource>(created));
    ASSERT_TRUE(std::holds_alternative<ValidationErrors>(patched)) << version;
    const auto& errors = std::get<ValidationErrors>(patched).errors;
    ASSERT_EQ(errors.size(), 1u) << version << Dump(patched);
    EXPECT_EQ(errors[0].target, "properties.platform.vnetIntegrationSubnetId");
    EXPECT_EQ(errors[0].message, "Required value: field cannot be null");
  }
  // The network block left empty is not an unknown member of the update schema.
  auto host_prefix =
      DecodePatch(kStableVersion, Kind::kCluster, Parse(R"({"properties":{"network":{"hostPrefix":null}}})"),
                  std::get<Resource>(created));
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(host_prefix));
  const auto& errors = std::get<ValidationErrors>(host_prefix).errors;
  ASSERT_EQ(errors.size(), 1u) << Dump(host_prefix);
  EXPECT_EQ(errors[0].target, "properties.network.hostPrefix");
}

// A node pool made without a subnet takes its cluster's; a replace without version.id or subnetId keeps
// the stored ones (the real service's NodePool/replace-with-tags-with-nil).
TEST(BadInput, NodePoolReplaceKeepsVersionAndSubnetLeftOut) {
  const json::object cluster = Parse(R"({"properties":{"platform":{"subnetId":
      "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a"}}})")
                                   .as_object();
  DecodeOptions options;
  options.parent_cluster = &cluster;
  json::value body = ValidNodePool();
  Erase(body, "/properties/platform/subnetId");
  for (std::string_view version : {kStableVersion, std::string_view("2024-06-10-preview")}) {
    auto created = DecodeCreate(version, Kind::kNodePool, body, options);
    ASSERT_TRUE(std::holds_alternative<Resource>(created)) << version << Dump(created);
    const Resource& pool = std::get<Resource>(created);
    EXPECT_EQ(pool.properties.at("platform").at("subnetId"),
              cluster.at("properties").at("platform").at("subnetId"));
    json::value replace = body;
    Erase(replace, "/properties/version");
    auto replaced = DecodeReplace(version, Kind::kNodePool, replace, pool, options);
    ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << version << Dump(replaced);
    EXPECT_EQ(std::get<Resource>(replaced).properties.at("version").at("id"), "4.20.8");
    EXPECT_EQ(std::get<Resource>(replaced).properties.at("platform").at("subnetId"),
              pool.properties.at("platform").at("subnetId"));
  }
}

TEST(BadInput, PatchNullRemovesOptionalField) {
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, ValidCluster());
  ASSERT_TRUE(std::holds_alternative<Resource>(created));
  json::value patch =
      Parse(R"({"tags": {"team": null, "env": "prod"}, "properties": {"nodeDrainTimeoutMinutes": null}})");
  auto patched = DecodePatch(kStableVersion, Kind::kCluster, patch, std::get<Resource>(created));
  ASSERT_TRUE(std::holds_alternative<Resource>(patched)) << Dump(patched);
  const Resource& r = std::get<Resource>(patched);
  EXPECT_EQ(r.properties.at("nodeDrainTimeoutMinutes"), 0);  // removed: the service default again
  EXPECT_FALSE(r.tags.contains("team"));
  EXPECT_EQ(r.tags.at("env"), "prod");
  EXPECT_EQ(r.properties.at("network"), std::get<Resource>(created).properties.at("network"));
}

}  // namespace
}  // namespace hcprp::api
