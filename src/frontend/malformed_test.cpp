// Malformed requests: each gets the right ARM error and leaves the store exactly as it was.
#include <gtest/gtest.h>

#include <set>

#include "frontend/testing/scenario.h"

namespace hcprp::frontend::testing {
namespace {

namespace bhttp = boost::beast::http;

struct Case {
  std::string name;
  bhttp::verb method;
  std::string target;
  std::string body;
  std::map<std::string, std::string> headers;
  unsigned status;
  std::set<std::string> codes;  // any of these error codes
};

const std::string kV = "?api-version=2026-10-01";
const std::set<std::string> kContentCodes = {"InvalidRequestContent", "InvalidParameter",
                                             "MultipleErrorsOccurred", "PropertyChangeNotAllowed"};

std::string Cluster() { return ClusterPath("existing"); }
std::string Pool() { return Cluster() + "/nodePools/pool1"; }

std::string Nested(int depth, char open, char close) {
  return std::string(depth, open) + std::string(depth, close);
}

std::string NestedObject(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(depth, '}');
  return s;
}

// A copy of the cluster body with the JSON pointer `path` set to the JSON text `value`.
std::string ClusterWith(std::string_view path, std::string_view value) {
  json::value body = ParseJson(ClusterBody()).value();
  std::string p(path);
  size_t cut = p.rfind('/');
  json::value* parent = FindPointer(body, p.substr(0, cut));
  if (parent == nullptr || !parent->is_object()) {
    json::value* root = &body;
    // Create missing objects along the path.
    size_t i = 1;
    while (i < cut) {
      size_t j = p.find('/', i);
      std::string key = p.substr(i, j - i);
      auto& o = root->as_object();
      if (!o.contains(key) || !o[key].is_object()) o[key] = json::object();
      root = &o[key];
      i = j + 1;
    }
    parent = root;
  }
  parent->as_object()[p.substr(cut + 1)] = ParseJson(value).value();
  return ToJson(body);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const std::string sub = std::string(kSub);

  // 1. Bodies that are not JSON objects, for PUT cluster, PATCH cluster and PUT node pool.
  std::vector<std::string> broken = {"{",
                                     "}",
                                     "[",
                                     "{\"location\":}",
                                     "nul",
                                     "{'location':'eastus'}",
                                     "{\"a\":1,}",
                                     "{} trailing",
                                     "\xff\xfe\x00\x01",
                                     "{\"location\":\"unterminated}",
                                     "[1,2]",
                                     "\"a string\"",
                                     "123",
                                     "null",
                                     "true",
                                     "{\"location\":\"eastus\"",
                                     Nested(200, '[', ']'),
                                     NestedObject(200),
                                     "{\"a\":\"\\uZZZZ\"}",
                                     "{\"a\":01}",
                                     " ",
                                     "{\"a\" 1}"};
  for (size_t i = 0; i < broken.size(); ++i) {
    cases.push_back({"broken_put_cluster_" + std::to_string(i),
                     bhttp::verb::put,
                     ClusterPath("newone") + kV,
                     broken[i],
                     {},
                     400,
                     {"InvalidRequestContent"}});
    cases.push_back({"broken_patch_cluster_" + std::to_string(i),
                     bhttp::verb::patch,
                     Cluster() + kV,
                     broken[i],
                     {},
                     400,
                     {"InvalidRequestContent"}});
    cases.push_back({"broken_put_pool_" + std::to_string(i),
                     bhttp::verb::put,
                     Cluster() + "/nodePools/np9" + kV,
                     broken[i],
                     {},
                     400,
                     {"InvalidRequestContent"}});
  }
  cases.push_back({"empty_put_body",
                   bhttp::verb::put,
                   ClusterPath("newone") + kV,
                   "",
                   {},
                   400,
                   {"InvalidRequestContent"}});

  // 2. Wrong content types.
  for (std::string ct : {"text/plain", "application/xml", "multipart/form-data", "application/jsonx", "json",
                         "text/json", "application/x-www-form-urlencoded"}) {
    cases.push_back({"content_type_put_" + ct,
                     bhttp::verb::put,
                     ClusterPath("newone") + kV,
                     ClusterBody(),
                     {{"Content-Type", ct}},
                     415,
                     {"UnsupportedMediaType"}});
    cases.push_back({"content_type_patch_" + ct,
                     bhttp::verb::patch,
                     Cluster() + kV,
                     "{\"tags\":{}}",
                     {{"Content-Type", ct}},
                     415,
                     {"UnsupportedMediaType"}});
  }
  cases.push_back({"content_type_post",
                   bhttp::verb::post,
                   Cluster() + "/requestAdminCredential" + kV,
                   "{}",
                   {{"Content-Type", "text/plain"}},
                   415,
                   {"UnsupportedMediaType"}});

  // 3. Well-formed JSON with wrong types or values.
  std::vector<std::pair<std::string, std::string>> wrong = {
      {"/location", "1"},
      {"/tags", "\"x\""},
      {"/tags", "{\"k\":1}"},
      {"/properties", "[]"},
      {"/properties/version", "\"4.19\""},
      {"/properties/network/podCidr", "\"999.0.0.0/14\""},
      {"/properties/network/podCidr", "\"10.0.0.0/33\""},
      {"/properties/network/podCidr", "\"abc\""},
      {"/properties/network/serviceCidr", "\"10.0.0.0\""},
      {"/properties/network/machineCidr", "12"},
      {"/properties/network/hostPrefix", "\"23\""},
      {"/properties/api/visibility", "\"Sideways\""},
      {"/properties/platform/subnetId", "\"not-a-resource-id\""},
      {"/properties/platform/subnetId", "5"},
      {"/properties/version/id", "[]"},
      {"/identity", "\"UserAssigned\""},
      {"/properties/platform/outboundType", "\"Nope\""},
      {"/properties/unknownField", "1"},
  };
  for (size_t i = 0; i < wrong.size(); ++i) {
    cases.push_back({"wrong_type_" + std::to_string(i) + wrong[i].first,
                     bhttp::verb::put,
                     ClusterPath("newone") + kV,
                     ClusterWith(wrong[i].first, wrong[i].second),
                     {},
                     400,
                     kContentCodes});
  }
  cases.push_back(
      {"pool_negative_replicas",
       bhttp::verb::put,
       Cluster() + "/nodePools/np9" + kV,
       R"({"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a","vmSize":"Standard_D4s_v3"},"replicas":-1}})",
       {},
       400,
       kContentCodes});
  cases.push_back(
      {"pool_replicas_string",
       bhttp::verb::put,
       Cluster() + "/nodePools/np9" + kV,
       R"({"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{"subnetId":"/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a","vmSize":"Standard_D4s_v3"},"replicas":"2"}})",
       {},
       400,
       kContentCodes});
  cases.push_back({"patch_tags_wrong_type",
                   bhttp::verb::patch,
                   Cluster() + kV,
                   R"({"tags":"x"})",
                   {},
                   400,
                   kContentCodes});
  cases.push_back({"patch_properties_array",
                   bhttp::verb::patch,
                   Cluster() + kV,
                   R"({"properties":[1]})",
                   {},
                   400,
                   kContentCodes});

  // 4. Invalid names.
  for (std::string n : std::vector<std::string>{"1abc", "a_b", "-a", "a-", std::string(55, 'a'), "a.b",
                                                "cl%C3%BCster", "a%20b"}) {
    cases.push_back({"cluster_name_" + n.substr(0, 12),
                     bhttp::verb::put,
                     ClusterPath(n) + kV,
                     ClusterBody(),
                     {},
                     400,
                     {"InvalidRequestContent", "MultipleErrorsOccurred"}});
  }
  for (std::string n : std::vector<std::string>{std::string(16, 'n'), "np_1", "9np", "np-"}) {
    cases.push_back({"pool_name_" + n,
                     bhttp::verb::put,
                     Cluster() + "/nodePools/" + n + kV,
                     NodePoolBody(),
                     {},
                     400,
                     {"InvalidRequestContent", "MultipleErrorsOccurred"}});
  }
  for (std::string rg : std::vector<std::string>{"rg.", std::string(91, 'r'), "rg!x", "rg%23x"}) {
    cases.push_back({"rg_name_" + rg.substr(0, 10),
                     bhttp::verb::put,
                     ClusterPath("okname", rg) + kV,
                     ClusterBody(),
                     {},
                     400,
                     {"InvalidResourceGroupName"}});
  }

  // 5. Subscription IDs.
  for (std::string s : {"not-a-guid", "1234", "1d3378d3-5a3f-4712-85a1-2485495dfc4",
                        "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", "1d3378d3_5a3f_4712_85a1_2485495dfc4b"}) {
    cases.push_back({"sub_id_get_" + s,
                     bhttp::verb::get,
                     ClusterPath("x", "rg1", s) + kV,
                     "",
                     {},
                     400,
                     {"InvalidSubscriptionID"}});
    cases.push_back({"sub_id_put_" + s,
                     bhttp::verb::put,
                     ClusterPath("x", "rg1", s) + kV,
                     ClusterBody(),
                     {},
                     400,
                     {"InvalidSubscriptionID"}});
  }

  // 6. Header injection (CR/LF/NUL in values).
  for (std::string h : {"x-ms-client-request-id", "x-ms-correlation-request-id", "If-Match", "Referer",
                        "x-ms-home-tenant-id", "x-ms-arm-resource-system-data"}) {
    cases.push_back({"inject_crlf_" + h,
                     bhttp::verb::put,
                     ClusterPath("newone") + kV,
                     ClusterBody(),
                     {{h, "value\r\nSet-Cookie: evil=1"}},
                     400,
                     {"InvalidParameter"}});
    cases.push_back({"inject_lf_" + h,
                     bhttp::verb::delete_,
                     Cluster() + kV,
                     "",
                     {{h, "v\nx"}},
                     400,
                     {"InvalidParameter"}});
  }

  // 7. Paths.
  cases.push_back({"path_encoded_slash",
                   bhttp::verb::put,
                   ClusterPath("a%2Fb") + kV,
                   ClusterBody(),
                   {},
                   404,
                   {"NotFound"}});
  cases.push_back({"path_encoded_nul",
                   bhttp::verb::put,
                   ClusterPath("a%00b") + kV,
                   ClusterBody(),
                   {},
                   404,
                   {"NotFound"}});
  cases.push_back({"path_double_slash",
                   bhttp::verb::put,
                   "/subscriptions/" + sub +
                       "//resourceGroups/rg1/providers/Microsoft.RedHatOpenShift/"
                       "hcpOpenShiftClusters/x" +
                       kV,
                   ClusterBody(),
                   {},
                   404,
                   {"NotFound"}});
  cases.push_back(
      {"path_bad_escape", bhttp::verb::put, ClusterPath("a%zzb") + kV, ClusterBody(), {}, 404, {"NotFound"}});
  cases.push_back(
      {"path_unknown_type",
       bhttp::verb::put,
       "/subscriptions/" + sub + "/resourceGroups/rg1/providers/Microsoft.RedHatOpenShift/widgets/x" + kV,
       ClusterBody(),
       {},
       404,
       {"InvalidResourceType"}});
  cases.push_back({"path_unknown_child",
                   bhttp::verb::put,
                   Cluster() + "/gadgets/x" + kV,
                   "{}",
                   {},
                   404,
                   {"InvalidResourceType"}});
  cases.push_back(
      {"path_other_provider",
       bhttp::verb::put,
       "/subscriptions/" + sub + "/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachines/x" + kV,
       "{}",
       {},
       404,
       {"NotFound"}});
  cases.push_back(
      {"method_post_on_resource", bhttp::verb::post, Cluster() + kV, "{}", {}, 405, {"MethodNotAllowed"}});
  cases.push_back({"method_put_on_list",
                   bhttp::verb::put,
                   Cluster() + "/nodePools" + kV,
                   "{}",
                   {},
                   405,
                   {"MethodNotAllowed"}});
  cases.push_back({"method_delete_operation",
                   bhttp::verb::delete_,
                   "/subscriptions/" + sub +
                       "/providers/Microsoft.RedHatOpenShift/locations/eastus/"
                       "hcpOperationStatuses/x" +
                       kV,
                   "",
                   {},
                   405,
                   {"MethodNotAllowed"}});

  // 8. api-version.
  for (std::string v : {"", "?api-version=", "?api-version=2099-01-01", "?api-version=2026-10-01%20",
                        "?api-version=2026-10-01-preview", "?API-VERSION=latest", "?apiversion=2026-10-01"}) {
    unsigned status = 400;
    std::set<std::string> code = {"InvalidParameter", "InvalidResourceType"};
    cases.push_back({"api_version_put_" + v,
                     bhttp::verb::put,
                     ClusterPath("newone") + v,
                     ClusterBody(),
                     {},
                     status,
                     code});
    cases.push_back({"api_version_delete_" + v, bhttp::verb::delete_, Cluster() + v, "", {}, status, code});
  }
  cases.push_back({"api_version_subscription",
                   bhttp::verb::put,
                   "/subscriptions/" + sub + kV,
                   R"({"state":"Deleted"})",
                   {},
                   400,
                   {"InvalidResourceType"}});

  // 9. Size.
  cases.push_back({"huge_body",
                   bhttp::verb::put,
                   ClusterPath("newone") + kV,
                   "{\"tags\":{\"k\":\"" + std::string(4 * 1024 * 1024 + 10, 'x') + "\"}}",
                   {},
                   413,
                   {"RequestEntityTooLarge"}});

  // 10. Paging parameters.
  for (std::string top : {"abc", "0", "1001", "-1", "1.5", "99999999999999999999"}) {
    cases.push_back({"top_" + top,
                     bhttp::verb::get,
                     "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" +
                         kV + "&$top=" + top,
                     "",
                     {},
                     400,
                     {"InvalidParameter"}});
  }
  for (std::string tok : {"!!", "a", "%FF%FF"}) {
    cases.push_back({"skiptoken_" + tok,
                     bhttp::verb::get,
                     "/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" +
                         kV + "&$skipToken=" + tok,
                     "",
                     {},
                     400,
                     {"InvalidParameter"}});
  }

  // 11. Subscription PUT bodies (the existing subscription must stay Registered).
  for (std::string b : {R"({"state":"Bogus"})", R"({"registrationDate":"x"})", R"({"state":5})", "nope", "[]",
                        R"({"state":"Registered","properties":"x"})"}) {
    cases.push_back({"subscription_body_" + b,
                     bhttp::verb::put,
                     "/subscriptions/" + sub + "?api-version=2.0",
                     b,
                     {},
                     400,
                     {"InvalidRequestContent"}});
  }

  // 12. Preflight and actions.
  std::string preflight = "/subscriptions/" + sub +
                          "/resourcegroups/rg1/providers/Microsoft.RedHatOpenShift/deployments/d/preflight" +
                          kV;
  for (std::string b : {"[]", "{}", R"({"resources":5})", "{"}) {
    cases.push_back({"preflight_" + b, bhttp::verb::post, preflight, b, {}, 400, {"InvalidRequestContent"}});
  }
  for (std::string b : {"[1]", R"({"certificateSigningRequest":5})", R"({"x":1})", "{"}) {
    cases.push_back({"credential_body_" + b,
                     bhttp::verb::post,
                     Cluster() + "/requestAdminCredential" + kV,
                     b,
                     {},
                     400,
                     {"InvalidRequestContent"}});
  }
  // 13. Conflicts and preconditions that must not write.
  cases.push_back({"if_none_match_existing",
                   bhttp::verb::put,
                   Cluster() + kV,
                   ClusterBody(),
                   {{"If-None-Match", "*"}},
                   412,
                   {"PreconditionFailed"}});
  cases.push_back({"if_match_absent",
                   bhttp::verb::put,
                   ClusterPath("newone") + kV,
                   ClusterBody(),
                   {{"If-Match", "*"}},
                   412,
                   {"PreconditionFailed"}});
  cases.push_back({"if_match_stale_delete",
                   bhttp::verb::delete_,
                   Cluster() + kV,
                   "",
                   {{"If-Match", "\"old\""}},
                   412,
                   {"PreconditionFailed"}});
  cases.push_back(
      {"put_pool_while_pool_busy", bhttp::verb::put, Pool() + kV, NodePoolBody(), {}, 409, {"Conflict"}});
  // A location that is a string but no region is not refused: the service sets its own region
  // (rules_scenario_test.cpp, Location.*).
  return cases;
}

class MalformedTest : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedTest, AnswersTheArmErrorAndWritesNothing) {
  const Case& c = GetParam();
  Scenario s;
  s.RegisterSubscription();
  auto created = s.Put(Cluster() + kV, ClusterBody());
  ASSERT_EQ(created.result_int(), 201u) << created.body();
  s.FinishAll();
  ASSERT_EQ(s.Put(Pool() + kV, NodePoolBody()).result_int(), 201u);  // left Accepted on purpose
  const std::string before = s.DumpStore();
  const size_t cs_objects = s.cs.ObjectCount();

  Call call{c.method, c.target, c.body, c.headers};
  Response r = s.Send(std::move(call));
  EXPECT_EQ(r.result_int(), c.status) << c.name << ": " << r.body().substr(0, 400);
  auto body = ParseJson(r.body());
  ASSERT_TRUE(body.ok()) << c.name << ": error body is not JSON";
  const auto* code = FindPointer(*body, "/error/code");
  const auto* message = FindPointer(*body, "/error/message");
  ASSERT_NE(code, nullptr) << c.name << ": " << r.body().substr(0, 400);
  ASSERT_NE(message, nullptr);
  EXPECT_TRUE(c.codes.count(std::string(code->as_string())) > 0) << c.name << ": got " << code->as_string();
  auto header = r.find("x-ms-error-code");
  ASSERT_NE(header, r.end());
  EXPECT_EQ(std::string(header->value()), std::string(code->as_string()));
  EXPECT_NE(r.find("x-ms-request-id"), r.end());
  for (const auto& f : r) {
    std::string v(f.value());
    EXPECT_EQ(v.find_first_of("\r\n"), std::string::npos) << c.name << ": header " << f.name_string();
  }
  EXPECT_EQ(s.DumpStore(), before) << c.name;
  EXPECT_EQ(s.cs.ObjectCount(), cs_objects) << c.name;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string out = std::to_string(info.index) + "_";
  for (char ch : info.param.name.substr(0, 40)) {
    out.push_back((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ? ch
                                                                                                   : '_');
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Requests, MalformedTest, ::testing::ValuesIn(Cases()), CaseName);

TEST(MalformedCount, AtLeastAHundredCases) { EXPECT_GE(Cases().size(), 100u); }

}  // namespace
}  // namespace hcprp::frontend::testing
