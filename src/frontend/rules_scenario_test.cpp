// The validation rules as request-level scenarios through the frontend: each case is a PUT or PATCH
// of a cluster, node pool or external auth built from a body the real service accepts, changed in one
// way, with the status, error code and targets the real service answers. Refused requests store
// nothing. docs/validation.md names the case of every rule.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "frontend/testing/scenario.h"

namespace hcprp::frontend::testing {
namespace {

namespace bhttp = boost::beast::http;

const std::string kSubId(kSub);
const std::string kRg = "/subscriptions/" + kSubId + "/resourceGroups/some-resource-group";
const std::string kVnet = kRg + "/providers/Microsoft.Network/virtualNetworks/test-vnet";
const std::string kIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/test-identity";
const std::string kOtherIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/other-identity";
const std::string kSmi = kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service-identity";
const std::string kDataPlaneIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dataplane-identity";
const std::string kOtherSub =
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/some-resource-group";
const std::string kOps = "properties.platform.operatorsAuthentication.userAssignedIdentities";

// The real service's valid cluster: one control-plane operator and the service managed identity,
// their identities assigned; a data-plane operator whose identity is not assigned; customer-managed
// etcd encryption.
json::value ValidCluster() {
  return json::object{
      {"location", "eastus"},
      {"identity",
       {{"type", "UserAssigned"},
        {"userAssignedIdentities", {{kIdentity, json::object()}, {kSmi, json::object()}}}}},
      {"properties",
       {{"version", {{"id", "4.20"}, {"channelGroup", "stable"}}},
        {"dns", {{"baseDomainPrefix", "testcluster"}}},
        {"network",
         {{"podCidr", "10.128.0.0/14"},
          {"serviceCidr", "172.30.0.0/16"},
          {"machineCidr", "10.0.0.0/16"},
          {"hostPrefix", 23}}},
        {"api", {{"visibility", "Public"}}},
        {"platform",
         {{"managedResourceGroup", "managed-rg"},
          {"subnetId", kVnet + "/subnets/test-subnet"},
          {"vnetIntegrationSubnetId", kVnet + "/subnets/test-vnet-integration-subnet"},
          {"networkSecurityGroupId", kRg + "/providers/Microsoft.Network/networkSecurityGroups/test-nsg"},
          {"operatorsAuthentication",
           {{"userAssignedIdentities",
             {{"controlPlaneOperators", {{"test-operator", kIdentity}}},
              {"dataPlaneOperators", {{"dataplane-operator", kDataPlaneIdentity}}},
              {"serviceManagedIdentity", kSmi}}}}}}},
        {"etcd",
         {{"dataEncryption",
           {{"keyManagementMode", "CustomerManaged"},
            {"customerManaged",
             {{"encryptionType", "KMS"},
              {"kms",
               {{"activeKey", {{"name", "test-key"}, {"version", "1"}}},
                {"vaultName", "test-vault"},
                {"visibility", "Public"}}}}}}}}}}}};
}

json::value ValidNodePool() {
  return json::object{
      {"location", "eastus"},
      {"properties",
       {{"version", {{"id", "4.20.8"}, {"channelGroup", "stable"}}},
        {"platform", {{"vmSize", "Standard_D8s_v3"}, {"subnetId", kVnet + "/subnets/test-subnet"}}},
        {"replicas", 3},
        {"autoRepair", true}}}};
}

json::value ValidExternalAuth() {
  return json::object{
      {"properties",
       {{"issuer",
         {{"url", "https://issuer.example.com"}, {"audiences", json::array{"audience1", "audience2"}}}},
        {"clients", json::array{json::object{
                        {"component", {{"name", "console"}, {"authClientNamespace", "openshift-console"}}},
                        {"clientId", "audience1"},
                        {"type", "Confidential"}}}},
        {"claim", {{"mappings", {{"username", {{"claim", "email"}, {"prefixPolicy", "NoPrefix"}}}}}}}}}};
}

// The object at a path of plain keys (identity IDs contain '/', so no JSON pointers here).
json::object& At(json::value& v, std::initializer_list<std::string_view> path) {
  json::value* cur = &v;
  for (auto key : path) {
    if (cur->is_null()) *cur = json::object();
    cur = &cur->as_object()[key];
  }
  if (cur->is_null()) *cur = json::object();
  return cur->as_object();
}
json::object& Props(json::value& v) { return At(v, {"properties"}); }
json::object& Platform(json::value& v) { return At(v, {"properties", "platform"}); }
json::object& Operators(json::value& v) {
  return At(v, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities"});
}
json::object& Assigned(json::value& v) { return At(v, {"identity", "userAssignedIdentities"}); }

enum class Kind { kCluster, kNodePool, kExternalAuth };
enum class Op { kCreate, kReplace, kPatch };

struct Case {
  std::string name;
  Kind kind;
  Op op;
  std::function<void(json::value&)> change;  // applied to the valid body (create, replace) or to {} (patch)
  int status;                                // 201/200/202 accepted, else 400
  std::multiset<std::string> targets;        // InvalidRequestContent targets of a refusal
  std::string api_version = std::string(kStable);
  std::function<void(json::value&)>
      before;  // replace/patch: applied to the body the resource is created with
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string PathOf(Kind kind) {
  std::string cluster = ClusterPath("rules-cluster");
  switch (kind) {
    case Kind::kCluster:
      return cluster;
    case Kind::kNodePool:
      return cluster + "/nodePools/np1";
    case Kind::kExternalAuth:
      return cluster + "/externalAuths/ea1";
  }
  return cluster;
}

json::value ValidBody(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return ValidCluster();
    case Kind::kNodePool:
      return ValidNodePool();
    case Kind::kExternalAuth:
      return ValidExternalAuth();
  }
  return json::object();
}

class RulesScenario : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { s.RegisterSubscription(); }

  void MustCreate(const std::string& path, const json::value& body, std::string_view version = kStable) {
    auto r = s.Put(path + "?api-version=" + std::string(version), json::serialize(body));
    ASSERT_EQ(r.result_int(), 201u) << path << "\n" << r.body();
    s.FinishAll();
  }

  Scenario s;
};

TEST_P(RulesScenario, AnswersAsTheRealService) {
  const Case& c = GetParam();
  const std::string path = PathOf(c.kind);
  if (c.kind != Kind::kCluster) {
    ASSERT_NO_FATAL_FAILURE(MustCreate(ClusterPath("rules-cluster"), ValidCluster()));
  }
  json::value body = ValidBody(c.kind);
  if (c.op != Op::kCreate) {
    json::value initial = ValidBody(c.kind);
    if (c.before) c.before(initial);
    ASSERT_NO_FATAL_FAILURE(MustCreate(path, initial, c.api_version));
    if (c.op == Op::kPatch) body = json::object();
  }
  if (c.change) c.change(body);
  const std::string before = s.DumpStore();
  auto r = s.Send({c.op == Op::kPatch ? bhttp::verb::patch : bhttp::verb::put,
                   path + "?api-version=" + c.api_version,
                   json::serialize(body),
                   {}});
  ASSERT_EQ(r.result_int(), static_cast<unsigned>(c.status)) << r.body();
  if (c.status < 400) return;
  EXPECT_EQ(s.DumpStore(), before) << "a refused request stores nothing";
  json::value reply = BodyOf(r);
  const json::object& error = reply.at("error").as_object();
  std::multiset<std::string> targets;
  if (c.targets.size() == 1) {
    EXPECT_EQ(error.at("code"), "InvalidRequestContent") << r.body();
    targets.insert(std::string(error.at("target").as_string()));
  } else {
    EXPECT_EQ(error.at("code"), "MultipleErrorsOccurred") << r.body();
    EXPECT_EQ(error.at("message"), json::value(std::to_string(c.targets.size()) + " errors occurred"))
        << r.body();
    for (const auto& d : error.at("details").as_array()) {
      EXPECT_EQ(d.at("code"), "InvalidRequestContent") << r.body();
      EXPECT_FALSE(d.at("message").as_string().empty());
      targets.insert(std::string(d.at("target").as_string()));
    }
  }
  EXPECT_EQ(targets, c.targets) << r.body();
}

using V = json::value&;
constexpr Kind C = Kind::kCluster;
constexpr Kind N = Kind::kNodePool;
constexpr Kind E = Kind::kExternalAuth;
constexpr Op kCreate = Op::kCreate;
constexpr Op kReplace = Op::kReplace;
constexpr Op kPatch = Op::kPatch;

std::vector<Case> ClusterCases() {
  return {
      {"ValidCluster", C, kCreate, nullptr, 201, {}},
      {"DataPlaneIdentityNotAssignedIsValid", C, kCreate, nullptr, 201, {}},
      {"OpenShift5Refused",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "5.0";
       },
       400,
       {"properties.version.id"}},
      {"VersionBelowMinimum",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.19";
       },
       400,
       {"properties.version.id"}},
      {"VersionWithMicro",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20.1";
       },
       400,
       {"properties.version.id"}},
      {"VersionNotSemver",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "four";
       },
       400,
       {"properties.version.id"}},
      {"ChannelGroupCandidate",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "candidate";
       },
       400,
       {"properties.version.channelGroup"}},
      {"ChannelGroupFast",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "fast";
       },
       201,
       {}},
      {"InvalidPodCidr",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["podCidr"] = "invalid-cidr";
       },
       400,
       {"properties.network.podCidr"}},
      {"InvalidServiceCidr",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["serviceCidr"] = "300.0.0.0/16";
       },
       400,
       {"properties.network.serviceCidr"}},
      {"Ipv6MachineCidr",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "2001:db8::/32";
       },
       400,
       {"properties.network.machineCidr"}},
      {"CidrWithHostBits",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["podCidr"] = "10.128.0.1/14";
       },
       400,
       {"properties.network.podCidr"}},
      {"HostPrefixTooSmall",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["hostPrefix"] = 22;
       },
       400,
       {"properties.network.hostPrefix"}},
      {"HostPrefixTooLarge",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["hostPrefix"] = 27;
       },
       400,
       {"properties.network.hostPrefix"}},
      {"MachineOverlapsService",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "10.0.0.0/16";
         At(b, {"properties", "network"})["serviceCidr"] = "10.0.1.0/24";
       },
       400,
       {"properties.network"}},
      {"MachineOverlapsServiceAndPod",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "10.0.0.0/14";
         At(b, {"properties", "network"})["serviceCidr"] = "10.0.0.0/16";
         At(b, {"properties", "network"})["podCidr"] = "10.1.0.0/16";
       },
       400,
       {"properties.network", "properties.network"}},
      {"AuthorizedCidrJunk",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"invalid-cidr"};
       },
       400,
       {"properties.api.authorizedCidrs[0]", "properties.api.authorizedCidrs[0]"}},
      {"AuthorizedCidrWhitespace",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"10.0.0.0/16", " 10.1.0.0/16"};
       },
       400,
       {"properties.api.authorizedCidrs[1]", "properties.api.authorizedCidrs[1]",
        "properties.api.authorizedCidrs[1]"}},
      {"AuthorizedAddressAndCidr",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"10.0.0.1", "192.168.0.0/24"};
       },
       201,
       {}},
      {"ManagedResourceGroupIsClusterGroup",
       C,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "rg1"; },
       400,
       {"properties.platform.managedResourceGroup"}},
      {"ManagedResourceGroupBadName",
       C,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "ends-with."; },
       400,
       {"properties.platform.managedResourceGroup"}},
      {"SubnetInOtherSubscription",
       C,
       kCreate,
       [](V b) {
         Platform(b)["subnetId"] =
             kOtherSub + "/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/s";
         Platform(b)["vnetIntegrationSubnetId"] =
             kOtherSub + "/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/i";
       },
       400,
       {"properties.platform.subnetId", "properties.platform.vnetIntegrationSubnetId"}},
      {"SubnetInManagedResourceGroup",
       C,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "some-resource-group"; },
       400,
       {"properties.platform.subnetId", "properties.platform.networkSecurityGroupId",
        "properties.platform.vnetIntegrationSubnetId", kOps + ".controlPlaneOperators[test-operator]",
        kOps + ".dataPlaneOperators[dataplane-operator]", kOps + ".serviceManagedIdentity"}},
      {"NsgInOtherSubscription",
       C,
       kCreate,
       [](V b) {
         Platform(b)["networkSecurityGroupId"] =
             kOtherSub + "/providers/Microsoft.Network/networkSecurityGroups/n";
       },
       400,
       {"properties.platform.networkSecurityGroupId"}},
      {"NsgWrongType",
       C,
       kCreate,
       [](V b) { Platform(b)["networkSecurityGroupId"] = kVnet + "/subnets/not-an-nsg"; },
       400,
       {"properties.platform.networkSecurityGroupId"}},
      {"IntegrationSubnetInOtherVnet",
       C,
       kCreate,
       [](V b) {
         Platform(b)["vnetIntegrationSubnetId"] =
             kRg + "/providers/Microsoft.Network/virtualNetworks/other/subnets/i";
       },
       400,
       {"properties.platform.vnetIntegrationSubnetId"}},
      {"OperatorIdentityNotAssigned",
       C,
       kCreate,
       [](V b) { Assigned(b).erase(kIdentity); },
       400,
       {kOps + ".controlPlaneOperators[test-operator]"}},
      {"IdentityAssignedButNotUsed",
       C,
       kCreate,
       [](V b) { Assigned(b)[kOtherIdentity] = json::object(); },
       400,
       {"identity.userAssignedIdentities[" + kOtherIdentity + "]"}},
      {"IdentityUsedTwice",
       C,
       kCreate,
       [](V b) { Operators(b)["serviceManagedIdentity"] = kIdentity; },
       400,
       {kOps + ".serviceManagedIdentity", "identity.userAssignedIdentities[" + kIdentity + "]",
        "identity.userAssignedIdentities[" + kSmi + "]"}},
      {"IdentityComparedIgnoringCase",
       C,
       kCreate,
       [](V b) {
         std::string upper = kIdentity;
         for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
         At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                "controlPlaneOperators"})["test-operator"] = upper;
       },
       201,
       {}},
      {"DataPlaneIdentityAssigned",
       C,
       kCreate,
       [](V b) { Assigned(b)[kDataPlaneIdentity] = json::object(); },
       400,
       {kOps + ".dataPlaneOperators[dataplane-operator]",
        "identity.userAssignedIdentities[" + kDataPlaneIdentity + "]"}},
      {"OperatorIdentityInOtherSubscription",
       C,
       kCreate,
       [](V b) {
         std::string other =
             kOtherSub + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/test-identity";
         At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                "controlPlaneOperators"})["test-operator"] = other;
         Assigned(b).erase(kIdentity);
         Assigned(b)[other] = json::object();
       },
       400,
       {kOps + ".controlPlaneOperators[test-operator]"}},
      {"OperatorIdentityWrongType",
       C,
       kCreate,
       [](V b) {
         std::string wrong = kRg + "/providers/Microsoft.Network/virtualNetworks/test-identity";
         At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                "controlPlaneOperators"})["test-operator"] = wrong;
         Assigned(b).erase(kIdentity);
       },
       400,
       {kOps + ".controlPlaneOperators[test-operator]"}},
      {"AssignedKeyNotAnIdentity",
       C,
       kCreate,
       [](V b) {
         Assigned(b)[kRg + "/providers/Microsoft.Network/networkSecurityGroups/n"] = json::object();
       },
       400,
       {"identity.userAssignedIdentities[" + kRg + "/providers/Microsoft.Network/networkSecurityGroups/n]",
        "identity.userAssignedIdentities[" + kRg + "/providers/Microsoft.Network/networkSecurityGroups/n]"}},
      {"MaxNodesTotalTooLarge",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxNodesTotal"] = 501;
       },
       400,
       {"properties.autoscaling.maxNodesTotal"}},
      {"MaxPodGracePeriodZero",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxPodGracePeriodSeconds"] = 0;
       },
       400,
       {"properties.autoscaling.maxPodGracePeriodSeconds",
        "properties.autoscaling.maxPodGracePeriodSeconds"}},
      {"MaxNodeProvisionTimeOne",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxNodeProvisionTimeSeconds"] = 1;
       },
       201,
       {}},
      {"PodPriorityThresholdZero",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["podPriorityThreshold"] = 0;
       },
       400,
       {"properties.autoscaling.podPriorityThreshold"}},
      {"KmsWithoutActiveKeyName",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms", "activeKey"})["name"] = "";
       },
       400,
       {"properties.etcd.dataEncryption.customerManaged.kms.activeKey.name"}},
      {"MirrorSourceWithScheme",
       C,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{
             json::object{{"source", "https://quay.io/openshift"}, {"mirrors", json::array{"mirror.io/x"}}}};
       },
       400,
       {"properties.imageDigestMirrors[0].source"}},
      {"MirrorUppercase",
       C,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{
             json::object{{"source", "quay.io/openshift"}, {"mirrors", json::array{"Mirror.io/x"}}}};
       },
       400,
       {"properties.imageDigestMirrors[0].mirrors[0]"}},
      {"MirrorWildcardSource",
       C,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{json::object{
             {"source", "*.example.com"}, {"mirrors", json::array{"mirror.example.com:5000/x"}}}};
       },
       201,
       {}},
      {"ProvisioningStateOnCreate",
       C,
       kCreate,
       [](V b) { Props(b)["provisioningState"] = "Succeeded"; },
       400,
       {"properties.provisioningState"}},
      {"TwoProblemsAtOnce",
       C,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "5.0";
         At(b, {"properties", "network"})["hostPrefix"] = 27;
       },
       400,
       {"properties.version.id", "properties.network.hostPrefix"}},
      // Updates.
      {"VersionMayNotDecrease",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20";
       },
       400,
       {"properties.version.id"},
       std::string(kStable),
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21";
       }},
      {"VersionSkipsAMinor",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.22";
       },
       400,
       {"properties.version.id"}},
      {"VersionNextMinor",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21";
       },
       200,
       {}},
      {"ChannelGroupChangeAllowed",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "fast";
       },
       200,
       {}},
      {"PlatformIsImmutable",
       C,
       kPatch,
       [](V b) {
         At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                "controlPlaneOperators"})["test-operator"] = kOtherIdentity;
       },
       400,
       {"properties.platform", kOps + ".controlPlaneOperators[test-operator]",
        "identity.userAssignedIdentities[" + kIdentity + "]"}},
      {"KmsVaultIsImmutable",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms"})["vaultName"] = "v2";
       },
       400,
       {"properties.etcd.dataEncryption.customerManaged.kms.vaultName"}},
      {"KmsKeyVersionCanRotate",
       C,
       kReplace,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms", "activeKey"})["version"] =
             "2";
       },
       200,
       {}},
      {"ProvisioningStateEqualToStoredIsIgnored",
       C,
       kReplace,
       [](V b) { Props(b)["provisioningState"] = "Succeeded"; },
       200,
       {}},
      {"ProvisioningStateDifferentFromStored",
       C,
       kReplace,
       [](V b) { Props(b)["provisioningState"] = "Failed"; },
       400,
       {"properties.provisioningState"}},
  };
}

std::vector<Case> NodePoolCases() {
  auto label = [](std::string key, std::string value) {
    return [key, value](V b) {
      Props(b)["labels"] = json::array{json::object{{"key", key}, {"value", value}}};
    };
  };
  return {
      {"ValidNodePool", N, kCreate, nullptr, 201, {}},
      {"VersionWithoutPatch",
       N,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20";
       },
       400,
       {"properties.version.id", "properties.version.id"}},
      {"VersionBelowMinimum",
       N,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20.7";
       },
       400,
       {"properties.version.id"}},
      {"VersionMissing", N, kCreate, [](V b) { Props(b).erase("version"); }, 400, {"properties.version.id"}},
      {"ChannelGroupNightly",
       N,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "nightly";
       },
       400,
       {"properties.version.channelGroup"}},
      {"ReplicasAbove200WithoutZone",
       N,
       kCreate,
       [](V b) { Props(b)["replicas"] = 201; },
       400,
       {"properties.replicas"}},
      {"ReplicasAbove200WithZone",
       N,
       kCreate,
       [](V b) {
         Props(b)["replicas"] = 201;
         Platform(b)["availabilityZone"] = "1";
       },
       201,
       {}},
      {"AutoScalingMinAbove200",
       N,
       kCreate,
       [](V b) {
         Props(b).erase("replicas");
         Props(b)["autoScaling"] = {{"min", 201}, {"max", 300}};
       },
       400,
       {"properties.autoScaling.min", "properties.autoScaling.max"}},
      {"AutoScalingMaxBelowMin",
       N,
       kCreate,
       [](V b) {
         Props(b).erase("replicas");
         Props(b)["autoScaling"] = {{"min", 5}, {"max", 3}};
       },
       400,
       {"properties.autoScaling.max"}},
      {"ReplicasWithAutoScaling",
       N,
       kCreate,
       [](V b) {
         Props(b)["autoScaling"] = {{"min", 1}, {"max", 3}};
       },
       400,
       {"properties.replicas"}},
      {"ForbiddenMasterRoleLabel",
       N,
       kCreate,
       label("node-role.kubernetes.io/master", ""),
       400,
       {"properties.labels[node-role.kubernetes.io/master]"}},
      {"ForbiddenMachineRoleInfra",
       N,
       kCreate,
       label("machine.openshift.io/cluster-api-machine-role", "infra"),
       400,
       {"properties.labels[machine.openshift.io/cluster-api-machine-role]"}},
      {"AllowedMachineRoleWorker",
       N,
       kCreate,
       label("machine.openshift.io/cluster-api-machine-role", "worker"),
       201,
       {}},
      {"KubernetesIoLabelAllowed", N, kCreate, label("topology.kubernetes.io/zone", "a"), 201, {}},
      {"LabelKeyWithSpace", N, kCreate, label("bad key", "v"), 400, {"properties.labels"}},
      {"LabelValueTooLong",
       N,
       kCreate,
       label("valid-key", std::string(64, 'a')),
       400,
       {"properties.labels[valid-key]"}},
      {"TaintKeyInvalid",
       N,
       kCreate,
       [](V b) {
         Props(b)["taints"] =
             json::array{json::object{{"key", "bad key"}, {"value", "v"}, {"effect", "NoSchedule"}}};
       },
       400,
       {"properties.taints[0].key"}},
      {"SubnetInOtherVnet",
       N,
       kCreate,
       [](V b) {
         Platform(b)["subnetId"] = kRg + "/providers/Microsoft.Network/virtualNetworks/other/subnets/s";
       },
       400,
       {"properties.platform.subnetId"}},
      {"EphemeralNeedsAutoRepair",
       N,
       kCreate,
       [](V b) {
         Props(b)["autoRepair"] = false;
         Platform(b)["osDisk"] = {{"diskType", "Ephemeral"}};
       },
       400,
       {"properties.autoRepair"}},
      {"EphemeralDiskTooLarge",
       N,
       kCreate,
       [](V b) {
         Platform(b)["osDisk"] = {{"diskType", "Ephemeral"}, {"sizeGiB", 2041}};
       },
       400,
       {"properties.platform.osDisk.sizeGiB"}},
      {"EncryptionSetWrongType",
       N,
       kCreate,
       [](V b) {
         Platform(b)["osDisk"] = {{"encryptionSetId", kVnet}};
       },
       400,
       {"properties.platform.osDisk.encryptionSetId"}},
      {"DrainTimeoutTooLarge",
       N,
       kCreate,
       [](V b) { Props(b)["nodeDrainTimeoutMinutes"] = 10081; },
       400,
       {"properties.nodeDrainTimeoutMinutes"}},
      // Updates.
      {"VmSizeIsImmutable",
       N,
       kReplace,
       [](V b) { Platform(b)["vmSize"] = "Standard_D16s_v3"; },
       400,
       {"properties.platform", "properties.platform.vmSize"}},
      {"VersionAboveCluster",
       N,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21.0";
       },
       400,
       {"properties.version.id"}},
      {"ReplicasChange", N, kPatch, [](V b) { Props(b)["replicas"] = 5; }, 202, {}},
      {"ProvisioningStateDifferentFromStored",
       N,
       kReplace,
       [](V b) { Props(b)["provisioningState"] = "Deleting"; },
       400,
       {"properties.provisioningState"}},
  };
}

std::vector<Case> ExternalAuthCases() {
  auto client = [](V b) -> json::object& {
    return At(b, {"properties"})["clients"].as_array()[0].as_object();
  };
  return {
      {"ValidExternalAuth", E, kCreate, nullptr, 201, {}},
      {"IssuerNotHttps",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "issuer"})["url"] = "http://issuer.example.com";
       },
       400,
       {"properties.issuer.url"}},
      {"IssuerCaNotPem",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "issuer"})["ca"] = "not a certificate";
       },
       400,
       {"properties.issuer.ca"}},
      {"ClientIdNotAnAudience",
       E,
       kCreate,
       [client](V b) { client(b)["clientId"] = "someone-else"; },
       400,
       {"properties.clients[0].clientId"}},
      {"ConsoleMustBeConfidential",
       E,
       kCreate,
       [client](V b) { client(b)["type"] = "Public"; },
       400,
       {"properties.clients[0].type"}},
      {"ConfidentialOnlyForConsole",
       E,
       kCreate,
       [client](V b) {
         client(b)["component"] = {{"name", "cli"}, {"authClientNamespace", "openshift-console"}};
       },
       400,
       {"properties.clients[0].type"}},
      {"PublicCliClient",
       E,
       kCreate,
       [client](V b) {
         client(b)["component"] = {{"name", "cli"}, {"authClientNamespace", "openshift-console"}};
         client(b)["type"] = "Public";
       },
       201,
       {}},
      {"DuplicateComponent",
       E,
       kCreate,
       [client](V b) {
         json::value copy = client(b);
         Props(b)["clients"].as_array().push_back(copy);
       },
       400,
       {"properties.clients[1]"}},
      {"TooManyClients",
       E,
       kCreate,
       [client](V b) {
         json::object first = client(b);
         json::array list{first};
         for (int i = 0; i < 20; ++i) {
           list.push_back(
               json::object{{"component", {{"name", "c" + std::to_string(i)}, {"authClientNamespace", "ns"}}},
                            {"clientId", "audience2"},
                            {"type", "Public"}});
         }
         Props(b)["clients"] = std::move(list);
       },
       400,
       {"properties.clients"}},
      {"PrefixPolicyWithoutPrefix",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefixPolicy"] = "Prefix";
       },
       400,
       {"properties.claim.mappings.username.prefix"}},
      {"PrefixWithoutPrefixPolicy",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefix"] = "oidc:";
       },
       400,
       {"properties.claim.mappings.username.prefix"}},
      {"PrefixWithPrefixPolicy",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefixPolicy"] = "Prefix";
         At(b, {"properties", "claim", "mappings", "username"})["prefix"] = "oidc:";
       },
       201,
       {}},
      {"RequiredClaimRuleWithoutClaim",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim"})["validationRules"] =
             json::array{json::object{{"type", "RequiredClaim"}}};
       },
       400,
       {"properties.claim.validationRules[0].requiredClaim",
        "properties.claim.validationRules[0].requiredClaim.claim",
        "properties.claim.validationRules[0].requiredClaim.requiredValue"}},
      {"GroupsClaimEmpty",
       E,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "groups"})["claim"] = "";
       },
       400,
       {"properties.claim.mappings.groups.claim"}},
  };
}

std::vector<Case> AllCases() {
  std::vector<Case> all = ClusterCases();
  for (auto& c : NodePoolCases()) all.push_back(std::move(c));
  for (auto& c : ExternalAuthCases()) all.push_back(std::move(c));
  return all;
}

std::string KindName(Kind k) { return k == C ? "Cluster" : k == N ? "NodePool" : "ExternalAuth"; }

std::string CaseName(const ::testing::TestParamInfo<Case>& param) {
  return KindName(param.param.kind) + "_" + param.param.name;
}

INSTANTIATE_TEST_SUITE_P(Rules, RulesScenario, ::testing::ValuesIn(AllCases()), CaseName);

// --- service defaults, location and systemData --------------------------------------------------

class ServiceValues : public ::testing::Test {
 protected:
  void SetUp() override { s.RegisterSubscription(); }
  Scenario s;
};

TEST_F(ServiceValues, GetAfterCreateShowsServerDefaults) {
  const std::string path = ClusterPath("defaults");
  ASSERT_EQ(s.Put(path + "?api-version=2026-10-01", json::serialize(ValidCluster())).result_int(), 201u);
  s.FinishAll();
  auto got = BodyOf(s.Get(path + "?api-version=2026-10-01"));
  EXPECT_EQ(*FindPointer(got, "/properties/autoscaling/maxNodeProvisionTimeSeconds"), 900);
  EXPECT_EQ(*FindPointer(got, "/properties/autoscaling/maxPodGracePeriodSeconds"), 600);
  EXPECT_EQ(*FindPointer(got, "/properties/autoscaling/podPriorityThreshold"), -10);
  EXPECT_EQ(*FindPointer(got, "/properties/version/channelGroup"), "stable");
  EXPECT_EQ(*FindPointer(got, "/properties/network/hostPrefix"), 23);

  ASSERT_EQ(
      s.Put(path + "/nodePools/np1?api-version=2026-10-01", json::serialize(ValidNodePool())).result_int(),
      201u);
  auto pool = BodyOf(s.Get(path + "/nodePools/np1?api-version=2026-10-01"));
  EXPECT_EQ(*FindPointer(pool, "/properties/autoRepair"), true);
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/sizeGiB"), 64);
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/diskStorageAccountType"), "Premium_LRS");
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/diskType"), "Managed");
}

TEST_F(ServiceValues, LocationIsTheServedRegion) {
  const std::string path = ClusterPath("located");
  json::value body = ValidCluster();
  body.as_object().erase("location");
  auto r = s.Put(path + "?api-version=2026-10-01", json::serialize(body));
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(*FindPointer(BodyOf(r), "/location"), "eastus");
  s.FinishAll();

  // A body naming another region gets the served one, as the real service does; a replace keeps it.
  json::value elsewhere = ValidCluster();
  elsewhere.as_object()["location"] = "westeurope";
  auto other = s.Put(ClusterPath("elsewhere") + "?api-version=2026-10-01", json::serialize(elsewhere));
  ASSERT_EQ(other.result_int(), 201u) << other.body();
  EXPECT_EQ(*FindPointer(BodyOf(other), "/location"), "eastus");
  auto replaced = s.Put(path + "?api-version=2026-10-01", json::serialize(elsewhere));
  ASSERT_EQ(replaced.result_int(), 200u) << replaced.body();
  EXPECT_EQ(*FindPointer(BodyOf(replaced), "/location"), "eastus");
}

TEST(ServiceValuesRegion, ConfiguredRegionIsUsed) {
  FrontendOptions options;
  options.location = "westus3";
  Scenario s(options);
  s.RegisterSubscription();
  auto r = s.Put(ClusterPath("west") + "?api-version=2026-10-01", json::serialize(ValidCluster()));
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  EXPECT_EQ(*FindPointer(BodyOf(r), "/location"), "westus3");
  EXPECT_NE(std::string(r["Azure-AsyncOperation"]).find("/locations/westus3/"), std::string::npos)
      << r["Azure-AsyncOperation"];
}

TEST_F(ServiceValues, SystemDataIsFilledWhenArmSendsNone) {
  auto r = s.Put(ClusterPath("nosd") + "?api-version=2026-10-01", json::serialize(ValidCluster()),
                 {{"x-ms-arm-resource-system-data", ""}});
  ASSERT_EQ(r.result_int(), 201u) << r.body();
  json::value body = BodyOf(r);
  EXPECT_EQ(*FindPointer(body, "/systemData/createdBy"), "Unknown-ARO-HCP-frontend");
  EXPECT_EQ(*FindPointer(body, "/systemData/createdByType"), "Application");
  ASSERT_NE(FindPointer(body, "/systemData/createdAt"), nullptr);
  EXPECT_EQ(*FindPointer(body, "/systemData/lastModifiedBy"), "Unknown-ARO-HCP-frontend");
}

}  // namespace
}  // namespace hcprp::frontend::testing
