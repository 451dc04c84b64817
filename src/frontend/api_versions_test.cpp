// Every api-version through the frontend: PUT, GET, PATCH and list of clusters, node pools and
// external auths, each response validated as sent against the document of the request's version.
#include <gtest/gtest.h>

#include "api/api.h"
#include "frontend/testing/scenario.h"

namespace hcprp::frontend::testing {
namespace {

std::string Header(const Response& r, std::string_view name) {
  auto it = r.find(name);
  return it == r.end() ? "" : std::string(it->value());
}

void ExpectConforms(const Response& r, std::string_view version, std::string_view definition) {
  auto errors = api::ValidateResponse(version, definition, BodyOf(r));
  std::string all;
  for (const auto& e : errors.errors) all += e.target + ": " + e.message + "\n";
  EXPECT_TRUE(all.empty()) << version << " " << definition << "\n" << all << r.body();
}

void ExpectListConforms(const Response& r, std::string_view version, std::string_view definition,
                        size_t count) {
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  json::value body = BodyOf(r);
  const json::value* items = FindPointer(body, "/value");
  ASSERT_NE(items, nullptr) << r.body();
  ASSERT_EQ(items->as_array().size(), count) << r.body();
  for (const json::value& item : items->as_array()) {
    auto errors = api::ValidateResponse(version, definition, item);
    EXPECT_TRUE(errors.errors.empty())
        << version << " " << definition << " list item\n"
        << errors.errors.front().target << ": " << errors.errors.front().message;
  }
}

class ApiVersionTest : public ::testing::TestWithParam<api::ApiVersion> {
 protected:
  void SetUp() override { s.RegisterSubscription(); }

  std::string V() const { return "?api-version=" + std::string(GetParam().name); }

  // The scenario bodies, in the shape of the version under test.
  std::string ClusterBodyForVersion() const {
    json::value body = ParseJson(ClusterBody()).value();
    if (GetParam().legacy_platform_and_kms) {
      FindPointer(body, "/properties/platform")->as_object().erase("vnetIntegrationSubnetId");
    }
    return json::serialize(body);
  }

  // PUT, let the backend finish, GET: both responses conform.
  void PutAndGet(const std::string& path, const std::string& body, std::string_view definition) {
    auto put = s.Put(path + V(), body);
    ASSERT_EQ(put.result_int(), 201u) << put.body();
    ExpectConforms(put, GetParam().name, definition);
    s.FinishOperation(OperationIdOf(Header(put, "Azure-AsyncOperation")));
    auto got = s.Get(path + V());
    ASSERT_EQ(got.result_int(), 200u) << got.body();
    ExpectConforms(got, GetParam().name, definition);
  }

  // PATCH the tags (or, for external auths, the audiences), let it finish, GET: both conform.
  void PatchAndGet(const std::string& path, const std::string& patch, std::string_view definition) {
    auto patched = s.Patch(path + V(), patch);
    ASSERT_EQ(patched.result_int(), 202u) << patched.body();
    if (!patched.body().empty()) ExpectConforms(patched, GetParam().name, definition);
    s.FinishOperation(OperationIdOf(Header(patched, "Location")));
    auto got = s.Get(path + V());
    ASSERT_EQ(got.result_int(), 200u) << got.body();
    ExpectConforms(got, GetParam().name, definition);
  }

  Scenario s;
};

TEST_P(ApiVersionTest, ClusterNodePoolAndExternalAuthConformThroughout) {
  const api::ApiVersion& v = GetParam();
  const std::string cluster = ClusterPath("c1");
  PutAndGet(cluster, ClusterBodyForVersion(), "HcpOpenShiftCluster");
  PatchAndGet(cluster, R"({"tags":{"team":"red"}})", "HcpOpenShiftCluster");
  ExpectListConforms(s.Get("/subscriptions/" + std::string(kSub) +
                           "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" + V()),
                     v.name, "HcpOpenShiftCluster", 1);
  ExpectListConforms(
      s.Get("/subscriptions/" + std::string(kSub) +
            "/resourceGroups/rg1/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" + V()),
      v.name, "HcpOpenShiftCluster", 1);

  const std::string pool = cluster + "/nodePools/np1";
  PutAndGet(pool, NodePoolBody(), "NodePool");
  PatchAndGet(pool, R"({"tags":{"team":"red"}})", "NodePool");
  ExpectListConforms(s.Get(cluster + "/nodePools" + V()), v.name, "NodePool", 1);

  const std::string auth = cluster + "/externalAuths/ea1";
  PutAndGet(auth, ExternalAuthBody(), "ExternalAuth");
  PatchAndGet(auth, R"({"properties":{"issuer":{"audiences":["a1","a2"]}}})", "ExternalAuth");
  ExpectListConforms(s.Get(cluster + "/externalAuths" + V()), v.name, "ExternalAuth", 1);

  // What this version wrote reads back through every other one.
  for (const api::ApiVersion& other : api::ApiVersions()) {
    const std::string q = "?api-version=" + std::string(other.name);
    ExpectConforms(s.Get(cluster + q), other.name, "HcpOpenShiftCluster");
    ExpectConforms(s.Get(pool + q), other.name, "NodePool");
    ExpectConforms(s.Get(auth + q), other.name, "ExternalAuth");
  }
}

TEST_P(ApiVersionTest, StatusIsRenderedWhereTheVersionDeclaresIt) {
  const api::ApiVersion& v = GetParam();
  const std::string cluster = ClusterPath("c1");
  PutAndGet(cluster, ClusterBodyForVersion(), "HcpOpenShiftCluster");
  PutAndGet(cluster + "/nodePools/np1", NodePoolBody(), "NodePool");
  PutAndGet(cluster + "/externalAuths/ea1", ExternalAuthBody(), "ExternalAuth");
  for (const std::string& path : {cluster, cluster + "/nodePools/np1", cluster + "/externalAuths/ea1"}) {
    json::value body = BodyOf(s.Get(path + V()));
    EXPECT_EQ(FindPointer(body, "/properties/status/conditions") != nullptr, v.status_conditions) << path;
    EXPECT_EQ(FindPointer(body, "/etag"), nullptr) << path;
  }
  json::value auth = BodyOf(s.Get(cluster + "/externalAuths/ea1" + V()));
  EXPECT_EQ(FindPointer(auth, "/properties/condition") != nullptr, v.external_auth_single_condition);
  json::value c = BodyOf(s.Get(cluster + V()));
  json::value np = BodyOf(s.Get(cluster + "/nodePools/np1" + V()));
  if (v.status_active_versions) {
    EXPECT_EQ(*FindPointer(c, "/properties/status/activeVersions/0/version"), "4.20");
    EXPECT_EQ(*FindPointer(np, "/properties/status/activeVersions/0/version"), "4.20.8");
  } else {
    EXPECT_EQ(FindPointer(c, "/properties/status/activeVersions"), nullptr);
    EXPECT_EQ(FindPointer(np, "/properties/status/activeVersions"), nullptr);
  }
}

TEST_P(ApiVersionTest, UnsupportedVersionErrorNamesEveryVersion) {
  auto r = s.Get(ClusterPath("c1") + "?api-version=2026-02-30");
  ASSERT_EQ(r.result_int(), 400u);
  EXPECT_NE(r.body().find(std::string(GetParam().name)), std::string::npos) << r.body();
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, ApiVersionTest, ::testing::ValuesIn(api::ApiVersions()),
                         [](const ::testing::TestParamInfo<api::ApiVersion>& param_info) {
                           std::string name(param_info.param.name);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace hcprp::frontend::testing
