// The schema engine and the semantic helpers on their own.
#include <gtest/gtest.h>

#include "api/schema.h"
#include "api/semantic.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Parse;

TEST(Schema, EveryVersionLoadsWithItsDefinitions) {
  ASSERT_EQ(ApiVersions().size(), 5u);
  for (const ApiVersion& v : ApiVersions()) {
    const std::string_view version = v.name;
    const SchemaSet* s = SchemaSet::ForVersion(version);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->api_version(), version);
    for (auto def : {"HcpOpenShiftCluster", "NodePool", "ExternalAuth", "HcpOpenShiftClusterUpdate"}) {
      EXPECT_TRUE(s->HasDefinition(def)) << def;
    }
  }
  EXPECT_TRUE(SchemaSet::ForVersion(kStableVersion)->HasDefinition("ImageDigestMirror"));
  EXPECT_FALSE(SchemaSet::ForVersion(kFirstPreview)->HasDefinition("ImageDigestMirror"));
  EXPECT_EQ(SchemaSet::ForVersion("1999-01-01"), nullptr);
}

TEST(Schema, CrossFileRefsAndAllOfResolve) {
  // location comes from TrackedResource in common-types/resource-management/v6/types.json;
  // identity.type from managedidentity.json next to it, both reached by relative paths from each
  // version's document.
  for (const ApiVersion& v : ApiVersions()) {
    const SchemaSet* s = SchemaSet::ForVersion(v.name);
    std::vector<FieldError> out;
    s->Validate("NodePool",
                Parse(R"({"identity": {"type": "Sometimes"}, "properties": {"platform": {"vmSize": "x"}}})"),
                SchemaMode::kRequest, out);
    ASSERT_EQ(out.size(), 2u) << v.name;
    std::set<std::string> targets{out[0].target, out[1].target};
    EXPECT_TRUE(targets.contains("location")) << v.name;
    EXPECT_TRUE(targets.contains("identity.type")) << v.name;
  }
}

TEST(Schema, ResponseModeRequiresReadOnlyAndRequestModeIgnoresIt) {
  const SchemaSet* s = SchemaSet::ForVersion(kStableVersion);
  json::value status = Parse(R"({"conditions": [{"type": "Available", "status": "True"}]})");
  std::vector<FieldError> request, response;
  s->Validate("ClusterResourceStatus", status, SchemaMode::kRequest, request);
  s->Validate("ClusterResourceStatus", status, SchemaMode::kResponse, response);
  EXPECT_TRUE(request.empty());
  EXPECT_EQ(response.size(), 3u);  // lastTransitionTime, reason, message
}

TEST(Schema, ReadOnlyStripAndExtractAreComplementary) {
  const SchemaSet* s = SchemaSet::ForVersion(kStableVersion);
  json::value v = Parse(R"({"url": "https://api", "visibility": "Public"})");
  json::value ro = s->ExtractReadOnly("ApiProfile", v);
  s->StripReadOnly("ApiProfile", v);
  EXPECT_EQ(ro, Parse(R"({"url": "https://api"})"));
  EXPECT_EQ(v, Parse(R"({"visibility": "Public"})"));
}

TEST(Schema, PruneDropsWhatTheVersionDoesNotDescribe) {
  const SchemaSet* s = SchemaSet::ForVersion(kFirstPreview);
  json::value v = Parse(R"({"sizeGiB": 64, "diskType": "Managed"})");
  s->Prune("OsDiskProfile", v);
  EXPECT_EQ(v, Parse(R"({"sizeGiB": 64})"));
}

TEST(Schema, DefaultsFillOnlyAbsentMembers) {
  const SchemaSet* s = SchemaSet::ForVersion(kStableVersion);
  json::value v = Parse(R"({"hostPrefix": 24})");
  s->ApplyDefaults("NetworkProfile", v);
  EXPECT_EQ(v.at("hostPrefix"), 24);
  EXPECT_EQ(v.at("podCidr"), "10.128.0.0/14");
}

TEST(Schema, PathParameterPatterns) {
  const SchemaSet* s = SchemaSet::ForVersion(kStableVersion);
  EXPECT_EQ(s->PathParameterPattern("hcpOpenShiftClusterName"), "^[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?$");
  EXPECT_TRUE(s->PathParameterPattern("nodePoolName").has_value());
  EXPECT_FALSE(s->PathParameterPattern("nothing").has_value());
}

TEST(Schema, JsonPaths) {
  EXPECT_EQ(JoinPath("", "tags"), "tags");
  EXPECT_EQ(JoinPath("tags", "foo"), "tags.foo");
  EXPECT_EQ(JoinPath("ids", "/a/b"), "ids[\"/a/b\"]");
  EXPECT_EQ(IndexPath("labels", 2), "labels[2]");
}

TEST(Cidr, ParsesAndDetectsOverlap) {
  auto a = ParseIpv4Cidr("10.128.0.0/14");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->prefix, 14);
  EXPECT_FALSE(a->host_bits_set);
  EXPECT_TRUE(ParseIpv4Cidr("10.128.0.1/14")->host_bits_set);
  EXPECT_FALSE(ParseIpv4Cidr("10.128.0.0"));
  EXPECT_TRUE(ParseIpv4Cidr("10.128.0.0", true));
  for (auto bad : {"10.0.0/8", "10.0.0.0.0/8", "256.0.0.0/8", "10.0.0.0/33", "01.0.0.0/8", "a.b.c.d/8",
                   "10.0.0.0/", "/8", "", "10..0.0/8"}) {
    EXPECT_FALSE(ParseIpv4Cidr(bad)) << bad;
  }
  EXPECT_TRUE(Overlaps(*ParseIpv4Cidr("10.0.0.0/8"), *ParseIpv4Cidr("10.128.0.0/14")));
  EXPECT_FALSE(Overlaps(*ParseIpv4Cidr("10.0.0.0/16"), *ParseIpv4Cidr("10.128.0.0/14")));
  EXPECT_TRUE(Overlaps(*ParseIpv4Cidr("0.0.0.0/0"), *ParseIpv4Cidr("172.30.0.0/16")));
}

}  // namespace
}  // namespace hcprp::api
