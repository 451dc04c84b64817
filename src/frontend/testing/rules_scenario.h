// Shared parts of the rule scenarios (rules_scenario_test.cpp, rules_scenario_children_test.cpp): the
// bodies the real service accepts, the case table's shape and the fixture that runs a case.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "frontend/testing/scenario.h"

namespace hcprp::frontend::testing::rules {

namespace bhttp = boost::beast::http;

inline const std::string kSubId(kSub);
inline const std::string kRg = "/subscriptions/" + kSubId + "/resourceGroups/some-resource-group";
inline const std::string kVnet = kRg + "/providers/Microsoft.Network/virtualNetworks/test-vnet";
inline const std::string kIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/test-identity";
inline const std::string kOtherIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/other-identity";
inline const std::string kSmi =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service-identity";
inline const std::string kDataPlaneIdentity =
    kRg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dataplane-identity";
inline const std::string kOtherSub =
    "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/some-resource-group";
inline const std::string kOps = "properties.platform.operatorsAuthentication.userAssignedIdentities";

// The real service's valid cluster: one control-plane operator and the service managed identity,
// their identities assigned; a data-plane operator whose identity is not assigned; customer-managed
// etcd encryption.
inline json::value ValidCluster() {
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

inline json::value ValidNodePool() {
  return json::object{
      {"location", "eastus"},
      {"properties",
       {{"version", {{"id", "4.20.8"}, {"channelGroup", "stable"}}},
        {"platform", {{"vmSize", "Standard_D8s_v3"}, {"subnetId", kVnet + "/subnets/test-subnet"}}},
        {"replicas", 3},
        {"autoRepair", true}}}};
}

inline json::value ValidExternalAuth() {
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
inline json::object& At(json::value& v, std::initializer_list<std::string_view> path) {
  json::value* cur = &v;
  for (auto key : path) {
    if (cur->is_null()) *cur = json::object();
    cur = &cur->as_object()[key];
  }
  if (cur->is_null()) *cur = json::object();
  return cur->as_object();
}
inline json::object& Props(json::value& v) { return At(v, {"properties"}); }
inline json::object& Platform(json::value& v) { return At(v, {"properties", "platform"}); }
inline json::object& Operators(json::value& v) {
  return At(v, {"properties", "platform", "operatorsAuthentication", "userAssignedIdentities"});
}
inline json::object& Assigned(json::value& v) { return At(v, {"identity", "userAssignedIdentities"}); }

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

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

inline std::string PathOf(Kind kind) {
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

inline json::value ValidBody(Kind kind) {
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

using V = json::value&;
inline constexpr Kind kC = Kind::kCluster;
inline constexpr Kind kN = Kind::kNodePool;
inline constexpr Kind kE = Kind::kExternalAuth;
inline constexpr Op kCreate = Op::kCreate;
inline constexpr Op kReplace = Op::kReplace;
inline constexpr Op kPatch = Op::kPatch;

std::string CaseName(const ::testing::TestParamInfo<Case>& param);

}  // namespace hcprp::frontend::testing::rules
