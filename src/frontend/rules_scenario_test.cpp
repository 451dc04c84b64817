// The validation rules as request-level scenarios through the frontend: each case is a PUT or PATCH
// of a cluster, node pool or external auth built from a body the real service accepts, changed in one
// way, with the status, error code and targets the real service answers. Refused requests store
// nothing. docs/validation.md names the case of every rule. This file: the runner, the cluster cases,
// and the service-set values; node pools and external auths are in rules_scenario_children_test.cpp.
#include "frontend/testing/rules_scenario.h"

namespace hcprp::frontend::testing::rules {

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

std::string CaseName(const ::testing::TestParamInfo<Case>& param) {
  std::string kind = param.param.kind == kC   ? "Cluster"
                     : param.param.kind == kN ? "NodePool"
                                              : "ExternalAuth";
  return kind + "_" + param.param.name;
}

namespace {

std::vector<Case> ClusterCases() {
  return {
      {"ValidCluster", kC, kCreate, nullptr, 201, {}},
      {"DataPlaneIdentityNotAssignedIsValid", kC, kCreate, nullptr, 201, {}},
      {"OpenShift5Refused",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "5.0";
       },
       400,
       {"properties.version.id"}},
      {"VersionBelowMinimum",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.19";
       },
       400,
       {"properties.version.id"}},
      {"VersionWithMicro",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20.1";
       },
       400,
       {"properties.version.id"}},
      {"VersionNotSemver",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "four";
       },
       400,
       {"properties.version.id"}},
      {"PreviewVersionMissing",
       kC,
       kCreate,
       [](V b) {
         Props(b).erase("version");
         Platform(b).erase("vnetIntegrationSubnetId");
         Props(b).erase("etcd");
         Props(b).erase("dns");
       },
       400,
       {"properties.version.id"},
       std::string(kPreview)},
      {"ChannelGroupCandidate",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "candidate";
       },
       400,
       {"properties.version.channelGroup"}},
      {"ChannelGroupFast",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "fast";
       },
       201,
       {}},
      {"InvalidPodCidr",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["podCidr"] = "invalid-cidr";
       },
       400,
       {"properties.network.podCidr"}},
      {"InvalidServiceCidr",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["serviceCidr"] = "300.0.0.0/16";
       },
       400,
       {"properties.network.serviceCidr"}},
      {"Ipv6MachineCidr",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "2001:db8::/32";
       },
       400,
       {"properties.network.machineCidr"}},
      {"CidrWithHostBits",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["podCidr"] = "10.128.0.1/14";
       },
       400,
       {"properties.network.podCidr"}},
      {"HostPrefixTooSmall",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["hostPrefix"] = 22;
       },
       400,
       {"properties.network.hostPrefix"}},
      {"HostPrefixTooLarge",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["hostPrefix"] = 27;
       },
       400,
       {"properties.network.hostPrefix"}},
      {"MachineOverlapsService",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "10.0.0.0/16";
         At(b, {"properties", "network"})["serviceCidr"] = "10.0.1.0/24";
       },
       400,
       {"properties.network"}},
      {"MachineOverlapsServiceAndPod",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "network"})["machineCidr"] = "10.0.0.0/14";
         At(b, {"properties", "network"})["serviceCidr"] = "10.0.0.0/16";
         At(b, {"properties", "network"})["podCidr"] = "10.1.0.0/16";
       },
       400,
       {"properties.network", "properties.network"}},
      {"AuthorizedCidrJunk",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"invalid-cidr"};
       },
       400,
       {"properties.api.authorizedCidrs[0]", "properties.api.authorizedCidrs[0]"}},
      {"AuthorizedCidrWhitespace",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"10.0.0.0/16", " 10.1.0.0/16"};
       },
       400,
       {"properties.api.authorizedCidrs[1]", "properties.api.authorizedCidrs[1]",
        "properties.api.authorizedCidrs[1]"}},
      {"AuthorizedAddressAndCidr",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "api"})["authorizedCidrs"] = json::array{"10.0.0.1", "192.168.0.0/24"};
       },
       201,
       {}},
      {"ManagedResourceGroupIsClusterGroup",
       kC,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "rg1"; },
       400,
       {"properties.platform.managedResourceGroup"}},
      {"ManagedResourceGroupBadName",
       kC,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "ends-with."; },
       400,
       {"properties.platform.managedResourceGroup"}},
      {"SubnetInOtherSubscription",
       kC,
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
       kC,
       kCreate,
       [](V b) { Platform(b)["managedResourceGroup"] = "some-resource-group"; },
       400,
       {"properties.platform.subnetId", "properties.platform.networkSecurityGroupId",
        "properties.platform.vnetIntegrationSubnetId", kOps + ".controlPlaneOperators[test-operator]",
        kOps + ".dataPlaneOperators[dataplane-operator]", kOps + ".serviceManagedIdentity"}},
      {"NsgInOtherSubscription",
       kC,
       kCreate,
       [](V b) {
         Platform(b)["networkSecurityGroupId"] =
             kOtherSub + "/providers/Microsoft.Network/networkSecurityGroups/n";
       },
       400,
       {"properties.platform.networkSecurityGroupId"}},
      {"NsgWrongType",
       kC,
       kCreate,
       [](V b) { Platform(b)["networkSecurityGroupId"] = kVnet + "/subnets/not-an-nsg"; },
       400,
       {"properties.platform.networkSecurityGroupId"}},
      {"IntegrationSubnetInOtherVnet",
       kC,
       kCreate,
       [](V b) {
         Platform(b)["vnetIntegrationSubnetId"] =
             kRg + "/providers/Microsoft.Network/virtualNetworks/other/subnets/i";
       },
       400,
       {"properties.platform.vnetIntegrationSubnetId"}},
      {"OperatorIdentityNotAssigned",
       kC,
       kCreate,
       [](V b) { Assigned(b).erase(kIdentity); },
       400,
       {kOps + ".controlPlaneOperators[test-operator]"}},
      {"IdentityAssignedButNotUsed",
       kC,
       kCreate,
       [](V b) { Assigned(b)[kOtherIdentity] = json::object(); },
       400,
       {"identity.userAssignedIdentities[" + kOtherIdentity + "]"}},
      {"IdentityUsedTwice",
       kC,
       kCreate,
       [](V b) { Operators(b)["serviceManagedIdentity"] = kIdentity; },
       400,
       {kOps + ".serviceManagedIdentity", "identity.userAssignedIdentities[" + kIdentity + "]",
        "identity.userAssignedIdentities[" + kSmi + "]"}},
      {"IdentityComparedIgnoringCase",
       kC,
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
       kC,
       kCreate,
       [](V b) { Assigned(b)[kDataPlaneIdentity] = json::object(); },
       400,
       {kOps + ".dataPlaneOperators[dataplane-operator]",
        "identity.userAssignedIdentities[" + kDataPlaneIdentity + "]"}},
      {"OperatorIdentityInOtherSubscription",
       kC,
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
       kC,
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
       kC,
       kCreate,
       [](V b) {
         Assigned(b)[kRg + "/providers/Microsoft.Network/networkSecurityGroups/n"] = json::object();
       },
       400,
       {"identity.userAssignedIdentities[" + kRg + "/providers/Microsoft.Network/networkSecurityGroups/n]",
        "identity.userAssignedIdentities[" + kRg + "/providers/Microsoft.Network/networkSecurityGroups/n]"}},
      {"MaxNodesTotalTooLarge",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxNodesTotal"] = 501;
       },
       400,
       {"properties.autoscaling.maxNodesTotal"}},
      {"MaxPodGracePeriodZero",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxPodGracePeriodSeconds"] = 0;
       },
       400,
       {"properties.autoscaling.maxPodGracePeriodSeconds",
        "properties.autoscaling.maxPodGracePeriodSeconds"}},
      {"MaxPodGracePeriodNegative",  // once, by the rule (at least 1), not by the document's minimum 0
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxPodGracePeriodSeconds"] = -1;
       },
       400,
       {"properties.autoscaling.maxPodGracePeriodSeconds"}},
      {"MaxNodeProvisionTimeOne",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["maxNodeProvisionTimeSeconds"] = 1;
       },
       201,
       {}},
      {"PodPriorityThresholdZero",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "autoscaling"})["podPriorityThreshold"] = 0;
       },
       400,
       {"properties.autoscaling.podPriorityThreshold"}},
      {"KmsWithoutActiveKeyName",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms", "activeKey"})["name"] = "";
       },
       400,
       {"properties.etcd.dataEncryption.customerManaged.kms.activeKey.name"}},
      {"MirrorSourceWithScheme",
       kC,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{
             json::object{{"source", "https://quay.io/openshift"}, {"mirrors", json::array{"mirror.io/x"}}}};
       },
       400,
       {"properties.imageDigestMirrors[0].source"}},
      {"MirrorUppercase",
       kC,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{
             json::object{{"source", "quay.io/openshift"}, {"mirrors", json::array{"Mirror.io/x"}}}};
       },
       400,
       {"properties.imageDigestMirrors[0].mirrors[0]"}},
      {"MirrorWildcardSource",
       kC,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{json::object{
             {"source", "*.example.com"}, {"mirrors", json::array{"mirror.example.com:5000/x"}}}};
       },
       201,
       {}},
      {"ProvisioningStateOnCreate",
       kC,
       kCreate,
       [](V b) { Props(b)["provisioningState"] = "Succeeded"; },
       400,
       {"properties.provisioningState"}},
      {"TwoProblemsAtOnce",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "5.0";
         At(b, {"properties", "network"})["hostPrefix"] = 27;
       },
       400,
       {"properties.version.id", "properties.network.hostPrefix"}},
      // Updates.
      {"VersionMayNotDecrease",
       kC,
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
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.22";
       },
       400,
       {"properties.version.id"}},
      {"VersionNextMinor",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21";
       },
       200,
       {}},
      {"ChannelGroupChangeAllowed",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "fast";
       },
       200,
       {}},
      {"PlatformIsImmutable",
       kC,
       kPatch,
       [](V b) {
         At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                "controlPlaneOperators"})["test-operator"] = kOtherIdentity;
       },
       400,
       {"properties.platform", kOps + ".controlPlaneOperators[test-operator]",
        "identity.userAssignedIdentities[" + kIdentity + "]"}},
      {"KmsVaultIsImmutable",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms"})["vaultName"] = "v2";
       },
       400,
       {"properties.etcd.dataEncryption.customerManaged.kms.vaultName"}},
      {"KmsKeyVersionCanRotate",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms", "activeKey"})["version"] =
             "2";
       },
       200,
       {}},
      {"ProvisioningStateEqualToStoredIsIgnored",
       kC,
       kReplace,
       [](V b) { Props(b)["provisioningState"] = "Succeeded"; },
       200,
       {}},
      {"ProvisioningStateDifferentFromStored",
       kC,
       kReplace,
       [](V b) { Props(b)["provisioningState"] = "Failed"; },
       400,
       {"properties.provisioningState"}},
      {"VersionSkipsAMajor",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "6.0";
       },
       400,
       {"properties.version.id", "properties.version.id"}},
      {"CrossMajorOffThePath",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "5.0";
       },
       400,
       {"properties.version.id", "properties.version.id"},
       std::string(kStable),
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21";
       }},
      {"KmsVisibilityIsImmutable",
       kC,
       kReplace,
       [](V b) {
         At(b, {"properties", "etcd", "dataEncryption", "customerManaged", "kms"})["visibility"] = "Private";
       },
       400,
       {"properties.etcd.dataEncryption.customerManaged.kms.visibility"}},
      {"OperatorNameEmpty",
       kC,
       kCreate,
       [](V b) {
         auto& cp = At(b, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities",
                           "controlPlaneOperators"});
         cp.erase("test-operator");
         cp[""] = kIdentity;
       },
       400,
       {kOps + ".controlPlaneOperators[]"}},
      {"AssignedKeyEmpty",
       kC,
       kCreate,
       [](V b) { Assigned(b)[""] = json::object(); },
       400,
       {"identity.userAssignedIdentities[]", "identity.userAssignedIdentities[]"}},
      {"MirrorPathWithSeparators",
       kC,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] = json::array{json::object{
             {"source", "quay.io/openshift-release-dev/ocp-v4.0-art-dev"},
             {"mirrors", json::array{"mirror.example.com:5000/ocp__release/x.y_z", "10.0.0.1:5000/ocp"}}}};
       },
       201,
       {}},
      {"MirrorPathBacktrackingBait",
       kC,
       kCreate,
       [](V b) {
         Props(b)["imageDigestMirrors"] =
             json::array{json::object{{"source", "quay.io/" + std::string(200, 'a') + "!"},
                                      {"mirrors", json::array{"mirror.io/x--y..z"}}}};
       },
       400,
       {"properties.imageDigestMirrors[0].source", "properties.imageDigestMirrors[0].mirrors[0]"}},
      {"TooManyImageDigestMirrors",
       kC,
       kCreate,
       [](V b) {
         json::array list;
         for (int i = 0; i < 241; ++i) {
           list.push_back(json::object{{"source", "quay.io/repo" + std::to_string(i)},
                                       {"mirrors", json::array{"mirror.example.com/x"}}});
         }
         Props(b)["imageDigestMirrors"] = std::move(list);
       },
       400,
       {"properties.imageDigestMirrors"}},
      {"IngressTypeUnknown",
       kC,
       kCreate,
       [](V b) {
         At(b, {"properties", "ingress"})["type"] = "Internal";
       },
       400,
       {"properties.ingress.type"}},
      {"OutboundTypeUnknown",
       kC,
       kCreate,
       [](V b) { Platform(b)["outboundType"] = "UserDefinedRouting"; },
       400,
       {"properties.platform.outboundType"}},
      {"TooManyMirrors",
       kC,
       kCreate,
       [](V b) {
         json::array mirrors;
         for (int i = 0; i < 256; ++i)
           mirrors.push_back(json::value("mirror" + std::to_string(i) + ".example.com/x"));
         Props(b)["imageDigestMirrors"] =
             json::array{json::object{{"source", "quay.io/openshift"}, {"mirrors", std::move(mirrors)}}};
       },
       400,
       {"properties.imageDigestMirrors[0].mirrors"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Clusters, RulesScenario, ::testing::ValuesIn(ClusterCases()), CaseName);

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
  EXPECT_EQ(*FindPointer(got, "/properties/platform/managedResourceGroup"), "managed-rg");
  // nodeDrainTimeoutMinutes 0 is shown as the real service shows it: from 2025-12-23-preview on only.
  EXPECT_EQ(*FindPointer(got, "/properties/nodeDrainTimeoutMinutes"), 0);
  const json::value preview2025 = BodyOf(s.Get(path + "?api-version=2025-12-23-preview"));
  EXPECT_EQ(*FindPointer(preview2025, "/properties/nodeDrainTimeoutMinutes"), 0);
  const json::value preview2024 = BodyOf(s.Get(path + "?api-version=2024-06-10-preview"));
  EXPECT_EQ(FindPointer(preview2024, "/properties/nodeDrainTimeoutMinutes"), nullptr);

  json::value unnamed = ValidCluster();
  Platform(unnamed).erase("managedResourceGroup");
  auto created = s.Put(ClusterPath("no-mrg") + "?api-version=2026-10-01", json::serialize(unnamed));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  std::string mrg(FindPointer(BodyOf(created), "/properties/platform/managedResourceGroup")->as_string());
  EXPECT_EQ(mrg.rfind("arohcp-no-mrg-", 0), 0u) << mrg;
  EXPECT_EQ(mrg.size(), std::string("arohcp-no-mrg-").size() + 36) << mrg;

  ASSERT_EQ(
      s.Put(path + "/nodePools/np1?api-version=2026-10-01", json::serialize(ValidNodePool())).result_int(),
      201u);
  auto pool = BodyOf(s.Get(path + "/nodePools/np1?api-version=2026-10-01"));
  EXPECT_EQ(*FindPointer(pool, "/properties/autoRepair"), true);
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/sizeGiB"), 64);
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/diskStorageAccountType"), "Premium_LRS");
  EXPECT_EQ(*FindPointer(pool, "/properties/platform/osDisk/diskType"), "Managed");
}

// A node pool created without platform.subnetId gets its cluster's, as the real service fills it.
TEST_F(ServiceValues, NodePoolTakesTheClusterSubnet) {
  const std::string path = ClusterPath("subnets");
  ASSERT_EQ(s.Put(path + "?api-version=2026-10-01", json::serialize(ValidCluster())).result_int(), 201u);
  s.FinishAll();
  json::value pool = ValidNodePool();
  At(pool, {"properties", "platform"}).erase("subnetId");
  auto created = s.Put(path + "/nodePools/np1?api-version=2026-10-01", json::serialize(pool));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  const json::value cluster = ValidCluster();
  const json::value body = BodyOf(created);
  EXPECT_EQ(*FindPointer(body, "/properties/platform/subnetId"),
            *FindPointer(cluster, "/properties/platform/subnetId"));
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

TEST_F(ServiceValues, PreflightComparesIdsWithTheClusterId) {
  const std::string url = "/subscriptions/" + kSubId +
                          "/resourcegroups/rg1/providers/Microsoft.RedHatOpenShift/deployments/dep1/preflight"
                          "?api-version=2026-10-01";
  json::value cluster = ValidCluster();
  cluster.as_object()["type"] = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters";
  cluster.as_object()["name"] = "pf";
  cluster.as_object()["apiVersion"] = kStable;
  cluster.as_object()["id"] = ClusterPath("pf");
  auto ok = s.Post(url, json::serialize(json::object{{"resources", json::array{cluster}}}));
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(*FindPointer(BodyOf(ok), "/status"), "Succeeded") << ok.body();
  Platform(cluster)["managedResourceGroup"] = "rg1";  // the cluster's own resource group
  auto failed = s.Post(url, json::serialize(json::object{{"resources", json::array{cluster}}}));
  ASSERT_EQ(failed.result_int(), 200u) << failed.body();
  EXPECT_EQ(*FindPointer(BodyOf(failed), "/status"), "Failed");
  EXPECT_EQ(*FindPointer(BodyOf(failed), "/error/target"),
            "resources[0].properties.platform.managedResourceGroup")
      << failed.body();
}

}  // namespace
}  // namespace hcprp::frontend::testing::rules
