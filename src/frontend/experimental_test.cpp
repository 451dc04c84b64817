// Experimental tags take effect only for a subscription that registered the experimental-features
// AFEC: the Cluster Service request carries what they turn on, and the operations their deadlines.
#include <gtest/gtest.h>

#include "api/experimental.h"
#include "frontend/testing/scenario.h"

namespace hcprp::frontend::testing {
namespace {

json::value BodyOfText(std::string_view text) {
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : json::value();
}

void RegisterWithFeatures(Scenario& s, std::string_view features) {
  std::string body =
      R"({"state":"Registered","registrationDate":"2025-01-01T00:00:00Z","properties":{"tenantId":")" +
      std::string(kTenant) + R"(","registeredFeatures":)" + std::string(features) + "}}";
  auto r = s.Put("/subscriptions/" + std::string(kSub) + "?api-version=2.0", body);
  ASSERT_EQ(r.result_int(), 200u) << r.body();
}

constexpr std::string_view kAfec =
    R"([{"name":"microsoft.redhatopenshift/experimentalreleasefeatures","state":"Registered"}])";

std::string ClusterWithTags(std::string_view tags) {
  json::value body = BodyOfText(ClusterBody());
  body.as_object()["tags"] = BodyOfText(tags);
  return json::serialize(body);
}

constexpr std::string_view kTags = R"({"aro-hcp.experimental.cluster.single-replica":"SingleReplica",
    "aro-hcp.experimental.cluster.size-override":"Minimal",
    "aro-hcp.experimental.cluster.max-creation-duration":"30m",
    "aro-hcp.experimental.cluster.max-deletion-duration":"2h"})";

// The Cluster Service object of the cluster at `path`, once the create's operation recorded it.
json::object CsObject(Scenario& s, const std::string& path) {
  auto doc = s.Resource(path);
  EXPECT_TRUE(doc && !doc->internal_id.empty());
  if (!doc) return {};
  auto object = s.cs.Get(doc->internal_id);
  EXPECT_TRUE(object.ok());
  return object.ok() ? *object : json::object();
}

TEST(ExperimentalFeatures, TakeEffectWithTheAfec) {
  Scenario s;
  RegisterWithFeatures(s, kAfec);
  const std::string path = ClusterPath("single");
  auto created = s.Put(path + "?api-version=" + std::string(kStable), ClusterWithTags(kTags));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  std::string create_op = OperationIdOf(std::string(created.at("Azure-AsyncOperation")));
  EXPECT_EQ(s.Operation(create_op)->deadline_seconds, std::optional<int64_t>(1800));
  s.FinishOperation(create_op);
  EXPECT_EQ(
      json::value(CsObject(s, path).at("properties")),
      BodyOfText(R"({"hosted_cluster_single_replica":"true","hosted_cluster_size_override":"e2e_minimal"})"));

  // A replace without the tags turns them off in the Cluster Service.
  auto replaced = s.Put(path + "?api-version=" + std::string(kStable), ClusterWithTags("{}"));
  ASSERT_EQ(replaced.result_int(), 200u) << replaced.body();
  EXPECT_EQ(json::value(CsObject(s, path).at("properties")), json::value(json::object()));
  s.FinishAll();

  // The deletion deadline is the one the tags say at the time of the delete.
  ASSERT_EQ(s.Put(path + "?api-version=" + std::string(kStable), ClusterWithTags(kTags)).result_int(), 200u);
  s.FinishAll();
  auto deleted = s.Delete(path + "?api-version=" + std::string(kStable));
  ASSERT_EQ(deleted.result_int(), 202u) << deleted.body();
  EXPECT_EQ(s.Operation(OperationIdOf(std::string(deleted.at("Azure-AsyncOperation"))))->deadline_seconds,
            std::optional<int64_t>(7200));
}

TEST(ExperimentalFeatures, IgnoredWithoutTheAfec) {
  Scenario s;
  RegisterWithFeatures(
      s, R"([{"name":"Microsoft.RedHatOpenShift/ExperimentalReleaseFeatures","state":"Pending"}])");
  const std::string path = ClusterPath("plain");
  std::string tags(kTags);
  tags.insert(1, R"("aro-hcp.experimental.cluster.unknown":"x",)");
  auto created = s.Put(path + "?api-version=" + std::string(kStable), ClusterWithTags(tags));
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  std::string create_op = OperationIdOf(std::string(created.at("Azure-AsyncOperation")));
  EXPECT_EQ(s.Operation(create_op)->deadline_seconds, std::nullopt);
  s.FinishOperation(create_op);
  EXPECT_FALSE(CsObject(s, path).contains("properties"));
  // The tags stay ordinary tags.
  EXPECT_EQ(BodyOf(s.Get(path + "?api-version=" + std::string(kStable))).at("tags").as_object().size(), 5u);
}

TEST(ExperimentalFeatures, UnknownTagIsRefusedWithTheAfec) {
  Scenario s;
  RegisterWithFeatures(s, kAfec);
  auto r = s.Put(ClusterPath("bad") + "?api-version=" + std::string(kStable),
                 ClusterWithTags(R"({"aro-hcp.experimental.cluster.unknown-feature":"something"})"));
  ASSERT_EQ(r.result_int(), 400u) << r.body();
  const json::value body = BodyOf(r);
  const json::object& error = body.at("error").as_object();
  EXPECT_EQ(error.at("code"), "InvalidRequestContent");
  EXPECT_EQ(error.at("message"),
            "Invalid value: \"aro-hcp.experimental.cluster.unknown-feature\": unrecognized experimental tag");
  EXPECT_EQ(error.at("target"), "tags[aro-hcp.experimental.cluster.unknown-feature]");
}

// The real service's own case (experimental-features-invalid-tag and -no-afec): a 2024-06-10-preview
// body without operator identities, with a known and an unknown experimental tag.
std::string FirstPreviewBodyWithTags() {
  const std::string ids =
      "/subscriptions/" + std::string(kSub) + "/resourceGroups/bar/providers/Microsoft.Network/";
  return R"({"identity":{"type":"UserAssigned","userAssignedIdentities":{}},"name":"bad-tag-test","properties":{
    "api":{"visibility":"Public"},"clusterImageRegistry":{"state":"Disabled"},"console":{},"dns":{},
    "etcd":{"dataEncryption":{"customerManaged":{"encryptionType":"KMS","kms":{"activeKey":{
      "name":"encryptionKeyName","vaultName":"keyVaultName","version":"2024-12-01-preview"}}},
      "keyManagementMode":"CustomerManaged"}},
    "network":{"hostPrefix":23,"machineCidr":"10.0.0.0/16","networkType":"OVNKubernetes","podCidr":"10.128.0.0/14",
      "serviceCidr":"172.30.0.0/16"},
    "platform":{"managedResourceGroup":"managed-resource-group-name","networkSecurityGroupId":")" +
         ids + R"(networkSecurityGroups/nsg","outboundType":"LoadBalancer","subnetId":")" + ids +
         R"(virtualNetworks/vnet/subnets/subnet"},
    "version":{"channelGroup":"stable","id":"4.20"}},
    "tags":{"aro-hcp.experimental.cluster.single-replica":"SingleReplica",
      "aro-hcp.experimental.cluster.unknown-feature":"something"},
    "type":"Microsoft.RedHatOpenShift/hcpOpenShiftClusters"})";
}

TEST(ExperimentalFeatures, TheRealServicesCasesAnswerAsItDoes) {
  Scenario with;
  RegisterWithFeatures(with, kAfec);
  auto refused = with.Put(ClusterPath("bad-tag-test") + "?api-version=" + std::string(kPreview),
                          FirstPreviewBodyWithTags());
  ASSERT_EQ(refused.result_int(), 400u) << refused.body();
  const json::value body = BodyOf(refused);
  EXPECT_EQ(body.at("error").at("target"), "tags[aro-hcp.experimental.cluster.unknown-feature]")
      << refused.body();

  Scenario without;
  RegisterWithFeatures(without, "[]");
  auto created = without.Put(ClusterPath("bad-tag-test") + "?api-version=" + std::string(kPreview),
                             FirstPreviewBodyWithTags());
  EXPECT_EQ(created.result_int(), 201u) << created.body();
}

}  // namespace
}  // namespace hcprp::frontend::testing
