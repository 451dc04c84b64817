// Round trips of the published examples through decode, storage, encode and response validation,
// in both api-versions and across them.
//
// The examples are generated with random values; these break our semantic rules and are fixed
// before use (FixExample):
// - clusters: network.hostPrefix 21 -> 23 (allowed range 23..26);
// - node pools: replicas and autoScaling are both set (autoScaling is removed), the update example
//   has autoScaling.min 29 > max 2 (removed too), its identity is type "None" with an identity key
//   "key4794" that is no resource ID (identity removed), and the taint key of 213 characters is no
//   Kubernetes qualified name (-> "example.com/dedicated");
// - external auths: username.prefixPolicy is a random string (-> "Prefix", a prefix is given), and
//   clients[0].clientId is not among issuer.audiences (-> "audience1").
#include <gtest/gtest.h>

#include "api/api.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Dump;
using testing::LoadJson;

struct Example {
  std::string dir;  // testdata/<dir>
  std::string version;
  Kind kind;
  std::string prefix;      // file prefix: HcpOpenShiftClusters, NodePools, ExternalAuths
  std::string name_param;  // path parameter holding the resource name
};

std::vector<Example> Examples() {
  std::vector<Example> out;
  for (auto [dir, version] : {std::pair{"stable", kStableVersion}, std::pair{"preview", kPreviewVersion}}) {
    out.push_back(
        {dir, std::string(version), Kind::kCluster, "HcpOpenShiftClusters", "hcpOpenShiftClusterName"});
    out.push_back({dir, std::string(version), Kind::kNodePool, "NodePools", "nodePoolName"});
    out.push_back({dir, std::string(version), Kind::kExternalAuth, "ExternalAuths", "externalAuthName"});
  }
  return out;
}

std::string ExamplePath(const Example& e, std::string_view operation) {
  return std::string(HCPRP_API_TESTDATA) + "/" + e.dir + "/" + e.prefix + "_" + std::string(operation) +
         "_MaximumSet_Gen.json";
}

void FixExample(Kind kind, json::value& body) {
  json::object* props =
      body.as_object().if_contains("properties") ? body.as_object()["properties"].if_object() : nullptr;
  if (props == nullptr) return;
  switch (kind) {
    case Kind::kCluster:
      if (json::value* hp = FindPointer(body, "/properties/network/hostPrefix")) *hp = 23;
      // The generated examples carry values the service refuses: an OpenShift version below its
      // minimum and zero autoscaling durations.
      if (json::value* id = FindPointer(body, "/properties/version/id")) *id = "4.20";
      if (json::value* s = FindPointer(body, "/properties/autoscaling/maxPodGracePeriodSeconds")) *s = 600;
      if (json::value* s = FindPointer(body, "/properties/autoscaling/maxNodeProvisionTimeSeconds")) *s = 900;
      break;
    case Kind::kNodePool:
      props->erase("autoScaling");
      body.as_object().erase("identity");
      if (json::value* key = FindPointer(body, "/properties/taints/0/key")) *key = "example.com/dedicated";
      if (json::value* id = FindPointer(body, "/properties/version/id")) *id = "4.20.8";
      break;
    case Kind::kExternalAuth:
      if (json::value* p = FindPointer(body, "/properties/claim/mappings/username/prefixPolicy"))
        *p = "Prefix";
      if (json::value* c = FindPointer(body, "/properties/clients/0/clientId")) *c = "audience1";
      // The service takes a PEM CA only, and Confidential clients only for the console.
      if (json::value* issuer = FindPointer(body, "/properties/issuer")) issuer->as_object().erase("ca");
      if (json::value* t = FindPointer(body, "/properties/clients/0/type")) *t = "Public";
      break;
  }
}

Envelope EnvelopeOf(const json::value& response_body) {
  Envelope env;
  const json::object& o = response_body.as_object();
  env.id = std::string(GetString(o, "id").value_or(""));
  env.name = std::string(GetString(o, "name").value_or(""));
  env.type = std::string(GetString(o, "type").value_or(""));
  if (const json::object* sd = GetObject(o, "systemData")) env.system_data = *sd;
  env.provisioning_state = "Succeeded";
  return env;
}

struct Created {
  Resource resource;
  Envelope envelope;
};

Created CreateFromExample(const Example& e) {
  json::value doc = LoadJson(ExamplePath(e, "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(e.kind, body);
  DecodeOptions options;
  options.name = std::string(FindPointer(doc, "/parameters/" + e.name_param)->as_string());
  auto decoded = DecodeCreate(e.version, e.kind, body, options);
  EXPECT_TRUE(std::holds_alternative<Resource>(decoded)) << e.prefix << " " << e.version << "\n"
                                                         << Dump(decoded);
  if (!std::holds_alternative<Resource>(decoded)) return {Resource{e.kind, "", {}, std::nullopt, {}, {}}, {}};
  const json::value& response = *FindPointer(doc, "/responses/200/body");
  Resource r = std::get<Resource>(decoded);
  r.observed = ObservedFromWire(e.version, e.kind, response);
  // The preview external auth example's condition reason has spaces, which the stable pattern for
  // reasons (CamelCase) rejects; the service sets CamelCase reasons.
  if (auto* status = r.observed.if_contains("status")) {
    for (auto& condition : status->at("conditions").as_array())
      condition.as_object()["reason"] = "AsExpected";
  }
  return {r, EnvelopeOf(response)};
}

class ExampleTest : public ::testing::TestWithParam<Example> {};

TEST_P(ExampleTest, CreateEncodesToValidResponseInEveryVersion) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  for (const auto& version : SupportedVersions()) {
    json::object body = EncodeResource(version, c.resource, c.envelope);
    ValidationErrors errors = ValidateResponse(version, DefinitionName(e.kind), body);
    EXPECT_TRUE(errors.errors.empty()) << "created with " << e.version << ", read with " << version << "\n"
                                       << Dump(errors) << json::serialize(body);
  }
}

TEST_P(ExampleTest, StorageRoundTripKeepsEverything) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  auto back = FromStorage(ToStorage(c.resource));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(back->kind, c.resource.kind);
  EXPECT_EQ(back->location, c.resource.location);
  EXPECT_EQ(back->tags, c.resource.tags);
  EXPECT_EQ(back->identity, c.resource.identity);
  EXPECT_EQ(back->properties, c.resource.properties);
  EXPECT_EQ(back->observed, c.resource.observed);
}

TEST_P(ExampleTest, UpdateExampleAppliesAndEncodesToValidResponse) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  json::value doc = LoadJson(ExamplePath(e, "Update"));
  json::value patch = *FindPointer(doc, "/parameters/properties");
  FixExample(e.kind, patch);
  auto patched = DecodePatch(e.version, e.kind, patch, c.resource);
  ASSERT_TRUE(std::holds_alternative<Resource>(patched)) << Dump(patched);
  const Resource& r = std::get<Resource>(patched);
  // What the patch says is in the result.
  if (const json::object* tags = GetObject(patch.as_object(), "tags")) {
    for (const auto& t : *tags) EXPECT_EQ(r.tags.at(t.key()), t.value());
  }
  if (const json::value* drain = FindPointer(patch, "/properties/nodeDrainTimeoutMinutes")) {
    EXPECT_EQ(r.properties.at("nodeDrainTimeoutMinutes"), *drain);
  }
  if (const json::value* audiences = FindPointer(patch, "/properties/issuer/audiences")) {
    EXPECT_EQ(*FindPointer(json::value(r.properties), "/issuer/audiences"), *audiences);
  }
  for (const auto& version : SupportedVersions()) {
    json::object body = EncodeResource(version, r, c.envelope);
    ValidationErrors errors = ValidateResponse(version, DefinitionName(e.kind), body);
    EXPECT_TRUE(errors.errors.empty()) << version << "\n" << Dump(errors) << json::serialize(body);
  }
}

TEST_P(ExampleTest, EncodedBodyDecodesBackToTheSameResource) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  json::value body = EncodeResource(e.version, c.resource, c.envelope);
  DecodeOptions options;
  options.current_provisioning_state = "Succeeded";  // the GET body carries it
  auto again = DecodeReplace(e.version, e.kind, body, c.resource, options);
  ASSERT_TRUE(std::holds_alternative<Resource>(again)) << Dump(again);
  EXPECT_EQ(std::get<Resource>(again).properties, c.resource.properties);
  EXPECT_EQ(std::get<Resource>(again).identity, c.resource.identity);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(Examples()),
                         [](const ::testing::TestParamInfo<Example>& param_info) {
                           return param_info.param.prefix + "_" + param_info.param.dir;
                         });

// --- Cross-version behaviour -------------------------------------------------------------------

Example StableCluster() { return Examples()[0]; }
Example PreviewCluster() { return Examples()[3]; }

TEST(CrossVersion, StableClusterReadWithPreviewDropsWhatPreviewLacks) {
  Created c = CreateFromExample(StableCluster());
  json::object body = EncodeProperties(kPreviewVersion, c.resource);
  const json::object& props = body.at("properties").as_object();
  for (std::string_view gone : {"ingress", "imageDigestMirrors", "status", "cryptoRestrictions"}) {
    EXPECT_FALSE(props.contains(gone)) << gone;
  }
  EXPECT_FALSE(props.at("platform").as_object().contains("vnetIntegrationSubnetId"));
  const json::value whole = body;
  const json::value* kms = FindPointer(whole, "/properties/etcd/dataEncryption/customerManaged/kms");
  ASSERT_NE(kms, nullptr);
  EXPECT_FALSE(kms->as_object().contains("vaultName"));
  EXPECT_FALSE(kms->as_object().contains("visibility"));
  EXPECT_EQ(kms->at("activeKey").at("vaultName"), "my-cool-vault");
  // The stable view still has all of it.
  json::object stable = EncodeProperties(kStableVersion, c.resource);
  EXPECT_EQ(stable.at("properties").at("ingress").at("type"), "Public");
  EXPECT_EQ(
      *FindPointer(json::value(stable), "/properties/etcd/dataEncryption/customerManaged/kms/vaultName"),
      "my-cool-vault");
}

TEST(CrossVersion, PreviewReplaceKeepsStableOnlyFields) {
  Created c = CreateFromExample(StableCluster());
  json::value body = EncodeProperties(kPreviewVersion, c.resource);
  testing::Set(body, "/properties/nodeDrainTimeoutMinutes", 45);
  auto replaced = DecodeReplace(kPreviewVersion, Kind::kCluster, body, c.resource);
  ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << Dump(replaced);
  const json::object& props = std::get<Resource>(replaced).properties;
  EXPECT_EQ(props.at("nodeDrainTimeoutMinutes"), 45);
  EXPECT_EQ(props.at("imageDigestMirrors"), c.resource.properties.at("imageDigestMirrors"));
  EXPECT_EQ(props.at("ingress"), c.resource.properties.at("ingress"));
  EXPECT_EQ(props.at("platform").at("vnetIntegrationSubnetId"),
            c.resource.properties.at("platform").at("vnetIntegrationSubnetId"));
  EXPECT_EQ(*FindPointer(json::value(props), "/etcd/dataEncryption/customerManaged/kms/visibility"),
            "Public");
}

TEST(CrossVersion, PreviewClusterReadWithStableGetsDefaults) {
  Created c = CreateFromExample(PreviewCluster());
  json::object body = EncodeProperties(kStableVersion, c.resource);
  json::value v = body;
  EXPECT_EQ(*FindPointer(v, "/properties/ingress/type"), "Public");
  EXPECT_EQ(*FindPointer(v, "/properties/cryptoRestrictions"), "None");
  EXPECT_EQ(*FindPointer(v, "/properties/platform/vnetIntegrationSubnetId"),
            *FindPointer(v, "/properties/platform/subnetId"));
  EXPECT_EQ(*FindPointer(v, "/properties/etcd/dataEncryption/customerManaged/kms/vaultName"),
            "my-cool-vault");
  EXPECT_EQ(*FindPointer(v, "/properties/etcd/dataEncryption/customerManaged/kms/keyVaultType"), "KeyVault");
}

TEST(CrossVersion, PreviewPlatformManagedEtcdIsAbsentInCanonicalForm) {
  json::value doc = LoadJson(ExamplePath(PreviewCluster(), "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(Kind::kCluster, body);
  testing::Set(body, "/properties/etcd/dataEncryption",
               json::object{{"keyManagementMode", "PlatformManaged"}});
  testing::Erase(body, "/properties/version");
  auto decoded = DecodeCreate(kPreviewVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(decoded)) << Dump(decoded);
  const Resource& r = std::get<Resource>(decoded);
  EXPECT_FALSE(r.properties.contains("etcd"));
  EXPECT_EQ(r.properties.at("version").at("id"), json::value(std::string(kDefaultOpenShiftVersion)));
  EXPECT_EQ(r.properties.at("version").at("channelGroup"), "stable");
}

TEST(CrossVersion, PreviewNodePoolWithoutVersionUsesCallerDefault) {
  json::value doc = LoadJson(ExamplePath(Examples()[4], "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(Kind::kNodePool, body);
  testing::Erase(body, "/properties/version");
  DecodeOptions options;
  options.default_version_id = "4.20.8";
  auto decoded = DecodeCreate(kPreviewVersion, Kind::kNodePool, body, options);
  ASSERT_TRUE(std::holds_alternative<Resource>(decoded)) << Dump(decoded);
  EXPECT_EQ(std::get<Resource>(decoded).properties.at("version").at("id"), "4.20.8");
}

// --- Defaults and read-only handling ----------------------------------------------------------

TEST(Defaults, MinimalClusterGetsSpecDefaults) {
  json::value body = testing::Parse(R"({
    "location": "eastus",
    "identity": {"type": "UserAssigned", "userAssignedIdentities": {
      "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi": {}}},
    "properties": {
      "version": {"id": "4.20"},
      "platform": {
        "subnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
        "vnetIntegrationSubnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/b",
        "networkSecurityGroupId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkSecurityGroups/n",
        "operatorsAuthentication": {"userAssignedIdentities": {"controlPlaneOperators": {}, "dataPlaneOperators": {},
          "serviceManagedIdentity": "/subscriptions/s/resourceGroups/g/providers/Microsoft.ManagedIdentity/userAssignedIdentities/SMI"}}
      }
    }})");
  auto decoded = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(decoded)) << Dump(decoded);
  json::value props = std::get<Resource>(decoded).properties;
  EXPECT_EQ(*FindPointer(props, "/network/podCidr"), "10.128.0.0/14");
  EXPECT_EQ(*FindPointer(props, "/network/serviceCidr"), "172.30.0.0/16");
  EXPECT_EQ(*FindPointer(props, "/network/machineCidr"), "10.0.0.0/16");
  EXPECT_EQ(*FindPointer(props, "/network/hostPrefix"), 23);
  EXPECT_EQ(*FindPointer(props, "/network/networkType"), "OVNKubernetes");
  EXPECT_EQ(*FindPointer(props, "/api/visibility"), "Public");
  EXPECT_EQ(*FindPointer(props, "/platform/outboundType"), "LoadBalancer");
  EXPECT_EQ(*FindPointer(props, "/clusterImageRegistry/state"), "Enabled");
  EXPECT_EQ(*FindPointer(props, "/cryptoRestrictions"), "None");
  EXPECT_EQ(*FindPointer(props, "/version/channelGroup"), "stable");
  EXPECT_EQ(FindPointer(props, "/etcd"), nullptr);
}

TEST(ReadOnly, ReadOnlyInputIsIgnoredAndNotStored) {
  Created c = CreateFromExample(StableCluster());
  json::value body = EncodeResource(kStableVersion, c.resource, c.envelope);
  testing::Set(body, "/properties/console/url", "https://evil.example.com");
  testing::Set(body, "/identity/principalId", "00000000-0000-0000-0000-000000000000");
  // A provisioningState in a create body is refused (BadInput.ProvisioningStateOnCreateIsRefused).
  body.at("properties").as_object().erase("provisioningState");
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
  const Resource& r = std::get<Resource>(created);
  EXPECT_FALSE(r.properties.contains("console"));
  EXPECT_FALSE(r.properties.contains("provisioningState"));
  EXPECT_FALSE(r.properties.contains("status"));
  EXPECT_FALSE(r.properties.at("platform").as_object().contains("issuerUrl"));
  EXPECT_FALSE(r.identity->contains("principalId"));
  EXPECT_TRUE(r.observed.empty());
}

TEST(Response, MissingReadOnlyRequiredPropertyIsReported) {
  Created c = CreateFromExample(StableCluster());
  c.resource.observed.erase("platform");  // platform.issuerUrl is required in responses
  json::object body = EncodeResource(kStableVersion, c.resource, c.envelope);
  ValidationErrors errors = ValidateResponse(kStableVersion, "HcpOpenShiftCluster", body);
  ASSERT_EQ(errors.errors.size(), 1u) << Dump(errors);
  EXPECT_EQ(errors.errors[0].target, "properties.platform.issuerUrl");
  EXPECT_EQ(errors.errors[0].code, kInvalidRequestContent);
}

TEST(Response, UnknownDefinitionAndVersionAreErrors) {
  EXPECT_FALSE(ValidateResponse(kStableVersion, "NoSuchThing", json::object()).errors.empty());
  EXPECT_FALSE(ValidateResponse("2020-01-01", "NodePool", json::object()).errors.empty());
}

TEST(Versions, SupportedVersions) {
  EXPECT_TRUE(IsSupportedVersion(kStableVersion));
  EXPECT_TRUE(IsSupportedVersion(kPreviewVersion));
  EXPECT_FALSE(IsSupportedVersion("2024-06-10"));
  EXPECT_EQ(SupportedVersions().size(), 2u);
  auto r = DecodeCreate("2099-01-01", Kind::kCluster, json::object());
  ASSERT_TRUE(std::holds_alternative<ValidationErrors>(r));
  EXPECT_EQ(std::get<ValidationErrors>(r).errors.at(0).code, kInvalidApiVersion);
}

TEST(Storage, CorruptDocumentsAreErrors) {
  EXPECT_FALSE(FromStorage(json::object()).ok());
  EXPECT_FALSE(
      FromStorage(json::object{{"schema", 1}, {"kind", "dragon"}, {"properties", json::object()}}).ok());
  EXPECT_FALSE(FromStorage(json::object{{"schema", 1}, {"kind", "cluster"}}).ok());
}

}  // namespace
}  // namespace hcprp::api
