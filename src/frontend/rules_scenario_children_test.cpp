// Rule scenarios of node pools and external auths (see rules_scenario_test.cpp).
#include <map>
#include <set>
#include <string>

#include "frontend/testing/rules_scenario.h"

namespace hcprp::frontend::testing::rules {
namespace {

std::vector<Case> NodePoolCases() {
  auto label = [](std::string key, std::string value) {
    return [key, value](V b) {
      Props(b)["labels"] = json::array{json::object{{"key", key}, {"value", value}}};
    };
  };
  return {
      {"ValidNodePool", kN, kCreate, nullptr, 201, {}},
      {"VersionWithoutPatch",
       kN,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20";
       },
       400,
       {"properties.version.id", "properties.version.id"}},
      {"VersionBelowMinimum",
       kN,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.20.7";
       },
       400,
       {"properties.version.id"}},
      {"VersionMissing", kN, kCreate, [](V b) { Props(b).erase("version"); }, 400, {"properties.version.id"}},
      {"PreviewVersionMissing",
       kN,
       kCreate,
       [](V b) { Props(b).erase("version"); },
       400,
       {"properties.version.id"},
       std::string(kPreview)},
      {"ChannelGroupNightly",
       kN,
       kCreate,
       [](V b) {
         At(b, {"properties", "version"})["channelGroup"] = "nightly";
       },
       400,
       {"properties.version.channelGroup"}},
      {"ReplicasAbove200WithoutZone",
       kN,
       kCreate,
       [](V b) { Props(b)["replicas"] = 201; },
       400,
       {"properties.replicas"}},
      {"ReplicasAbove200WithZone",
       kN,
       kCreate,
       [](V b) {
         Props(b)["replicas"] = 201;
         Platform(b)["availabilityZone"] = "1";
       },
       201,
       {}},
      {"AutoScalingMinAbove200",
       kN,
       kCreate,
       [](V b) {
         Props(b).erase("replicas");
         Props(b)["autoScaling"] = {{"min", 201}, {"max", 300}};
       },
       400,
       {"properties.autoScaling.min", "properties.autoScaling.max"}},
      {"AutoScalingMaxBelowMin",
       kN,
       kCreate,
       [](V b) {
         Props(b).erase("replicas");
         Props(b)["autoScaling"] = {{"min", 5}, {"max", 3}};
       },
       400,
       {"properties.autoScaling.max"}},
      {"ReplicasWithAutoScaling",
       kN,
       kCreate,
       [](V b) {
         Props(b)["autoScaling"] = {{"min", 1}, {"max", 3}};
       },
       400,
       {"properties.replicas"}},
      {"ForbiddenMasterRoleLabel",
       kN,
       kCreate,
       label("node-role.kubernetes.io/master", ""),
       400,
       {"properties.labels[node-role.kubernetes.io/master]"}},
      {"ForbiddenMachineRoleInfra",
       kN,
       kCreate,
       label("machine.openshift.io/cluster-api-machine-role", "infra"),
       400,
       {"properties.labels[machine.openshift.io/cluster-api-machine-role]"}},
      {"AllowedMachineRoleWorker",
       kN,
       kCreate,
       label("machine.openshift.io/cluster-api-machine-role", "worker"),
       201,
       {}},
      {"KubernetesIoLabelAllowed", kN, kCreate, label("topology.kubernetes.io/zone", "a"), 201, {}},
      {"LabelKeyWithSpace", kN, kCreate, label("bad key", "v"), 400, {"properties.labels"}},
      {"LabelValueTooLong",
       kN,
       kCreate,
       label("valid-key", std::string(64, 'a')),
       400,
       {"properties.labels[valid-key]"}},
      {"TaintKeyInvalid",
       kN,
       kCreate,
       [](V b) {
         Props(b)["taints"] =
             json::array{json::object{{"key", "bad key"}, {"value", "v"}, {"effect", "NoSchedule"}}};
       },
       400,
       {"properties.taints[0].key"}},
      {"SubnetInOtherVnet",
       kN,
       kCreate,
       [](V b) {
         Platform(b)["subnetId"] = kRg + "/providers/Microsoft.Network/virtualNetworks/other/subnets/s";
       },
       400,
       {"properties.platform.subnetId"}},
      {"EphemeralNeedsAutoRepair",
       kN,
       kCreate,
       [](V b) {
         Props(b)["autoRepair"] = false;
         Platform(b)["osDisk"] = {{"diskType", "Ephemeral"}};
       },
       400,
       {"properties.autoRepair"}},
      {"EphemeralDiskTooLarge",
       kN,
       kCreate,
       [](V b) {
         Platform(b)["osDisk"] = {{"diskType", "Ephemeral"}, {"sizeGiB", 2041}};
       },
       400,
       {"properties.platform.osDisk.sizeGiB"}},
      {"EncryptionSetWrongType",
       kN,
       kCreate,
       [](V b) {
         Platform(b)["osDisk"] = {{"encryptionSetId", kVnet}};
       },
       400,
       {"properties.platform.osDisk.encryptionSetId"}},
      {"EncryptionSetBadName",
       kN,
       kCreate,
       [](V b) {
         Platform(b)["osDisk"] = {
             {"encryptionSetId", kRg + "/providers/Microsoft.Compute/diskEncryptionSets/bad.name"}};
       },
       400,
       {"properties.platform.osDisk.encryptionSetId"}},
      {"TaintValueInvalid",
       kN,
       kCreate,
       [](V b) {
         Props(b)["taints"] = json::array{
             json::object{{"key", "example.com/gpu"}, {"value", "-bad-"}, {"effect", "NoSchedule"}}};
       },
       400,
       {"properties.taints[0].value"}},
      {"DrainTimeoutTooLarge",
       kN,
       kCreate,
       [](V b) { Props(b)["nodeDrainTimeoutMinutes"] = 10081; },
       400,
       {"properties.nodeDrainTimeoutMinutes"}},
      {"VmSizeNotOffered",
       kN,
       kCreate,
       [](V b) { Platform(b)["vmSize"] = "Standard_D2s_v3"; },
       400,
       {"properties.platform.vmSize"}},
      {"VmSizeOffered", kN, kCreate, [](V b) { Platform(b)["vmSize"] = "Standard_E8s_v5"; }, 201, {}},
      // Updates.
      {"VmSizeIsImmutable",
       kN,
       kReplace,
       [](V b) { Platform(b)["vmSize"] = "Standard_D16s_v3"; },
       400,
       {"properties.platform", "properties.platform.vmSize"}},
      {"VersionAboveCluster",
       kN,
       kReplace,
       [](V b) {
         At(b, {"properties", "version"})["id"] = "4.21.0";
       },
       400,
       {"properties.version.id"}},
      {"ReplicasChange", kN, kPatch, [](V b) { Props(b)["replicas"] = 5; }, 202, {}},
      {"ProvisioningStateDifferentFromStored",
       kN,
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
      {"ValidExternalAuth", kE, kCreate, nullptr, 201, {}},
      {"IssuerNotHttps",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "issuer"})["url"] = "http://issuer.example.com";
       },
       400,
       {"properties.issuer.url"}},
      {"IssuerCaNotPem",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "issuer"})["ca"] = "not a certificate";
       },
       400,
       {"properties.issuer.ca"}},
      {"ClientIdNotAnAudience",
       kE,
       kCreate,
       [client](V b) { client(b)["clientId"] = "someone-else"; },
       400,
       {"properties.clients[0].clientId"}},
      {"ConsoleMustBeConfidential",
       kE,
       kCreate,
       [client](V b) { client(b)["type"] = "Public"; },
       400,
       {"properties.clients[0].type"}},
      {"ConfidentialOnlyForConsole",
       kE,
       kCreate,
       [client](V b) {
         client(b)["component"] = {{"name", "cli"}, {"authClientNamespace", "openshift-console"}};
       },
       400,
       {"properties.clients[0].type"}},
      {"PublicCliClient",
       kE,
       kCreate,
       [client](V b) {
         client(b)["component"] = {{"name", "cli"}, {"authClientNamespace", "openshift-console"}};
         client(b)["type"] = "Public";
       },
       201,
       {}},
      {"DuplicateComponent",
       kE,
       kCreate,
       [client](V b) {
         json::value copy = client(b);
         Props(b)["clients"].as_array().push_back(copy);
       },
       400,
       {"properties.clients[1]"}},
      {"TooManyClients",
       kE,
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
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefixPolicy"] = "Prefix";
       },
       400,
       {"properties.claim.mappings.username.prefix"}},
      {"PrefixWithoutPrefixPolicy",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefix"] = "oidc:";
       },
       400,
       {"properties.claim.mappings.username.prefix"}},
      {"PrefixWithPrefixPolicy",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["prefixPolicy"] = "Prefix";
         At(b, {"properties", "claim", "mappings", "username"})["prefix"] = "oidc:";
       },
       201,
       {}},
      {"RequiredClaimRuleWithoutClaim",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim"})["validationRules"] =
             json::array{json::object{{"type", "RequiredClaim"}}};
       },
       400,
       {"properties.claim.validationRules[0].requiredClaim",
        "properties.claim.validationRules[0].requiredClaim.claim",
        "properties.claim.validationRules[0].requiredClaim.requiredValue"}},
      {"EmptyAudience",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "issuer"})["audiences"] = json::array{"audience1", ""};
       },
       400,
       {"properties.issuer.audiences[1]"}},
      {"ComponentNameTooLong",
       kE,
       kCreate,
       [client](V b) { client(b)["component"].as_object()["name"] = std::string(257, 'c'); },
       400,
       {"properties.clients[0].component.name", "properties.clients[0].type"}},
      {"ComponentNamespaceTooLong",
       kE,
       kCreate,
       [client](V b) { client(b)["component"].as_object()["authClientNamespace"] = std::string(64, 'n'); },
       400,
       {"properties.clients[0].component.authClientNamespace", "properties.clients[0].type"}},
      {"EmptyExtraScope",
       kE,
       kCreate,
       [client](V b) {
         client(b)["extraScopes"] = json::array{"openid", ""};
       },
       400,
       {"properties.clients[0].extraScopes[1]"}},
      {"UsernameClaimTooLong",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "username"})["claim"] = std::string(257, 'u');
       },
       400,
       {"properties.claim.mappings.username.claim"}},
      {"GroupsClaimEmpty",
       kE,
       kCreate,
       [](V b) {
         At(b, {"properties", "claim", "mappings", "groups"})["claim"] = "";
       },
       400,
       {"properties.claim.mappings.groups.claim"}},
  };
}

INSTANTIATE_TEST_SUITE_P(NodePools, RulesScenario, ::testing::ValuesIn(NodePoolCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(ExternalAuths, RulesScenario, ::testing::ValuesIn(ExternalAuthCases()), CaseName);

// A node pool version change stays within two minors of the control plane and of itself, and the
// control plane stays within two minors of every node pool.
TEST(NodePoolVersionSkew, FollowsTheControlPlane) {
  Scenario s;
  s.RegisterSubscription();
  const std::string cluster = ClusterPath("skew");
  const std::string v = "?api-version=2026-10-01";
  json::value body = ValidCluster();
  ASSERT_EQ(s.Put(cluster + v, json::serialize(body)).result_int(), 201u);
  s.FinishAll();
  ASSERT_EQ(s.Put(cluster + "/nodePools/np1" + v, json::serialize(ValidNodePool())).result_int(), 201u);
  s.FinishAll();
  auto cluster_at = [&](std::string_view minor) {
    At(body, {"properties", "version"})["id"] = minor;
    auto r = s.Put(cluster + v, json::serialize(body));
    s.FinishAll();
    return r;
  };
  for (std::string_view minor : {"4.21", "4.22"}) {
    auto r = cluster_at(minor);
    ASSERT_EQ(r.result_int(), 200u) << r.body();
  }
  auto ahead = cluster_at("4.23");  // three minors above the node pool's 4.20.8
  ASSERT_EQ(ahead.result_int(), 400u) << ahead.body();
  EXPECT_EQ(BodyOf(ahead).at("error").at("target"), "properties.version.id");
  EXPECT_EQ(
      BodyOf(ahead).at("error").at("message"),
      "Invalid value: \"4.23\": cluster minor 4.23 must not be more than two minor versions ahead of node "
      "pool \"np1\" (minor 4.20)");
  auto change = [&](std::string_view version) {
    json::value pool = ValidNodePool();
    At(pool, {"properties", "version"})["id"] = version;
    auto r = s.Put(cluster + "/nodePools/np1" + v, json::serialize(pool));
    s.FinishAll();
    return r;
  };
  // Three minors above the node pool's 4.20.8, and above the control plane's 4.22: two problems.
  auto skipping = change("4.23.1");
  ASSERT_EQ(skipping.result_int(), 400u) << skipping.body();
  const json::value problems = BodyOf(skipping);
  EXPECT_EQ(problems.at("error").at("code"), "MultipleErrorsOccurred") << skipping.body();
  for (const auto& detail : problems.at("error").at("details").as_array())
    EXPECT_EQ(detail.at("target"), "properties.version.id") << skipping.body();
  auto next = change("4.22.1");
  ASSERT_EQ(next.result_int(), 200u) << next.body();
  auto now_allowed = cluster_at("4.23");  // the node pool runs 4.22 now
  ASSERT_EQ(now_allowed.result_int(), 200u) << now_allowed.body();
  auto lagging = change("4.20.9");  // the cluster runs 4.23: more than two minors ahead
  ASSERT_EQ(lagging.result_int(), 400u) << lagging.body();
  EXPECT_EQ(BodyOf(lagging).at("error").at("target"), "properties.version.id");
}

// One external auth a cluster: the real service refuses the create of a second one (any other
// external auth stored for the cluster counts, one being deleted too) and stores nothing; the one it
// has may still be replaced and patched.
class OneExternalAuthPerCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    s.RegisterSubscription();
    ASSERT_EQ(s.Put(cluster + v, json::serialize(ValidCluster())).result_int(), 201u);
    s.FinishAll();
  }

  Response PutAuth(std::string_view name, const json::value& body = ValidExternalAuth(),
                   std::map<std::string, std::string> headers = {}) {
    return s.Put(cluster + "/externalAuths/" + std::string(name) + v, json::serialize(body),
                 std::move(headers));
  }

  // A PUT of `name` refused for the other external auth, nothing stored.
  void ExpectRefused(std::string_view name, std::map<std::string, std::string> headers = {}) {
    const std::string before = s.DumpStore();
    auto r = PutAuth(name, ValidExternalAuth(), std::move(headers));
    ASSERT_EQ(r.result_int(), 400u) << r.body();
    const json::value reply = BodyOf(r);
    EXPECT_EQ(reply.at("error").at("code"), "InvalidRequestContent") << r.body();
    EXPECT_EQ(reply.at("error").at("message"), json::value(std::string(kMessage))) << r.body();
    EXPECT_EQ(reply.at("error").at("target"), "name") << r.body();
    EXPECT_EQ(s.DumpStore(), before) << "a refused request stores nothing";
    EXPECT_EQ(s.Get(cluster + "/externalAuths/" + std::string(name) + v).result_int(), 404u);
  }

  static constexpr std::string_view kMessage =
      "Forbidden: There are other external auths on the cluster. Only one external auth is allowed per "
      "cluster.";
  const std::string cluster = ClusterPath("one-auth");
  const std::string v = "?api-version=" + std::string(kStable);
  Scenario s;
};

TEST_F(OneExternalAuthPerCluster, SecondCreateIsRefused) {
  ASSERT_EQ(PutAuth("default").result_int(), 201u);
  ExpectRefused("second");  // the first one's create is still under way
  s.FinishAll();
  ExpectRefused("second");
  ExpectRefused("second", {{"If-None-Match", "*"}});  // decided after reading the resource
  auto list = s.Get(cluster + "/externalAuths" + v);
  ASSERT_EQ(list.result_int(), 200u);
  EXPECT_EQ(BodyOf(list).at("value").as_array().size(), 1u);
}

TEST_F(OneExternalAuthPerCluster, TheOneMayBeReplacedAndPatched) {
  ASSERT_EQ(PutAuth("default").result_int(), 201u);
  s.FinishAll();
  json::value body = ValidExternalAuth();
  At(body, {"properties", "issuer"})["audiences"] = json::array{"audience1", "audience3"};
  auto replaced = PutAuth("default", body);
  ASSERT_EQ(replaced.result_int(), 200u) << replaced.body();
  s.FinishAll();
  auto other_case = PutAuth("DEFAULT");  // resource names ignore case
  ASSERT_EQ(other_case.result_int(), 200u) << other_case.body();
  s.FinishAll();
  auto matched = PutAuth("default", ValidExternalAuth(), {{"If-Match", "*"}});
  ASSERT_EQ(matched.result_int(), 200u) << matched.body();
  s.FinishAll();
  auto patched = s.Patch(cluster + "/externalAuths/default" + v,
                         R"({"properties":{"issuer":{"audiences":["audience1","audience4"]}}})");
  EXPECT_EQ(patched.result_int(), 202u) << patched.body();
}

TEST_F(OneExternalAuthPerCluster, OneBeingDeletedCountsUntilItIsGone) {
  ASSERT_EQ(PutAuth("default").result_int(), 201u);
  s.FinishAll();
  ASSERT_EQ(s.Delete(cluster + "/externalAuths/default" + v).result_int(), 202u);
  ExpectRefused("second");
  s.FinishAll();
  auto r = PutAuth("second");
  EXPECT_EQ(r.result_int(), 201u) << r.body();
}

TEST_F(OneExternalAuthPerCluster, RefusedWithTheBodysOwnProblems) {
  ASSERT_EQ(PutAuth("default").result_int(), 201u);
  json::value body = ValidExternalAuth();
  At(body, {"properties", "issuer"})["url"] = "http://issuer.example.com";
  auto r = PutAuth("second", body);
  ASSERT_EQ(r.result_int(), 400u) << r.body();
  const json::value reply = BodyOf(r);
  const json::object& error = reply.at("error").as_object();
  EXPECT_EQ(error.at("code"), "MultipleErrorsOccurred") << r.body();
  std::multiset<std::string> targets;
  for (const auto& d : error.at("details").as_array())
    targets.insert(std::string(d.at("target").as_string()));
  EXPECT_EQ(targets, (std::multiset<std::string>{"name", "properties.issuer.url"})) << r.body();
}

TEST_F(OneExternalAuthPerCluster, OtherClustersDoNotCount) {
  ASSERT_EQ(PutAuth("default").result_int(), 201u);
  const std::string neighbour = ClusterPath("one-auth2");
  json::value neighbour_body = ValidCluster();
  Platform(neighbour_body)["managedResourceGroup"] = "managed-rg2";
  ASSERT_EQ(s.Put(neighbour + v, json::serialize(neighbour_body)).result_int(), 201u);
  s.FinishAll();
  auto r = s.Put(neighbour + "/externalAuths/default" + v, json::serialize(ValidExternalAuth()));
  EXPECT_EQ(r.result_int(), 201u) << r.body();
}

// Subscription registration (PUT /subscriptions/{id}), as the real service validates it.
struct SubscriptionCase {
  std::string name;
  std::string body;
  int status;
  std::string target;
};

void PrintTo(const SubscriptionCase& c, std::ostream* os) { *os << c.name; }

class SubscriptionRules : public ::testing::TestWithParam<SubscriptionCase> {};

TEST_P(SubscriptionRules, AnswersAsTheRealService) {
  const SubscriptionCase& c = GetParam();
  Scenario s;
  auto r = s.Put("/subscriptions/" + std::string(kSub) + "?api-version=2.0", c.body);
  ASSERT_EQ(r.result_int(), static_cast<unsigned>(c.status)) << r.body();
  if (c.status < 400) return;
  json::value reply = BodyOf(r);
  EXPECT_EQ(reply.at("error").at("code"), "InvalidRequestContent") << r.body();
  EXPECT_EQ(reply.at("error").at("target"), json::value(c.target)) << r.body();
  EXPECT_EQ(s.Get("/subscriptions/" + std::string(kSub) + "?api-version=2.0").result_int(), 404u);
}

std::vector<SubscriptionCase> SubscriptionCases() {
  const std::string date = R"("registrationDate":"2025-01-01T00:00:00Z")";
  return {
      {"Valid", R"({"state":"Registered",)" + date + "}", 200, ""},
      {"ValidWithProperties", R"({"state":"Registered",)" + date + R"(,"properties":{"tenantId":"t"}})", 200,
       ""},
      {"UnknownState", R"({"state":"Bogus",)" + date + "}", 400, "state"},
      {"MissingRegistrationDate", R"({"state":"Registered"})", 400, "registrationDate"},
      {"RegistrationDateWithWhitespace",
       R"({"state":"Registered","registrationDate":" 2025-01-01T00:00:00Z"})", 400, "registrationDate"},
  };
}

INSTANTIATE_TEST_SUITE_P(Subscriptions, SubscriptionRules, ::testing::ValuesIn(SubscriptionCases()),
                         [](const ::testing::TestParamInfo<SubscriptionCase>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace hcprp::frontend::testing::rules
