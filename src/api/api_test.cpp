// The published examples of every api-version through decode, storage, encode and response
// validation. Example bodies are fixed where their random values break semantic rules (FixExample in
// test_util.h lists each fix); responses are validated as the client receives them.
#include <gtest/gtest.h>

#include "api/api.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Created;
using testing::CreateFromExample;
using testing::Dump;
using testing::Example;
using testing::ExampleOf;
using testing::ExamplePath;
using testing::Examples;
using testing::FixExample;
using testing::LoadJson;
using testing::OnTheWire;

class ExampleTest : public ::testing::TestWithParam<Example> {};

TEST_P(ExampleTest, CreateEncodesToValidResponseInEveryVersion) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  for (const auto& version : SupportedVersions()) {
    json::value body = OnTheWire(EncodeResource(version, c.resource, c.envelope));
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
    json::value body = OnTheWire(EncodeResource(version, r, c.envelope));
    ValidationErrors errors = ValidateResponse(version, DefinitionName(e.kind), body);
    EXPECT_TRUE(errors.errors.empty()) << version << "\n" << Dump(errors) << json::serialize(body);
  }
}

TEST_P(ExampleTest, EncodedBodyDecodesBackToTheSameResource) {
  const Example& e = GetParam();
  Created c = CreateFromExample(e);
  json::value body = OnTheWire(EncodeResource(e.version, c.resource, c.envelope));
  DecodeOptions options;
  options.current_provisioning_state = "Succeeded";  // the GET body carries it
  auto again = DecodeReplace(e.version, e.kind, body, c.resource, options);
  ASSERT_TRUE(std::holds_alternative<Resource>(again)) << Dump(again);
  EXPECT_EQ(std::get<Resource>(again).properties, c.resource.properties);
  EXPECT_EQ(std::get<Resource>(again).identity, c.resource.identity);
}

// A sanity check of the validator: the examples' own responses conform to their documents (with
// the fixes of FixExample: the random username.prefixPolicy breaks its closed enum in responses too).
TEST_P(ExampleTest, ExampleResponsesConformToTheirDocument) {
  const Example& e = GetParam();
  for (std::string_view operation : {"CreateOrUpdate", "Get", "Update"}) {
    json::value doc = LoadJson(ExamplePath(e, operation));
    const json::value* responses = FindPointer(doc, "/responses");
    ASSERT_NE(responses, nullptr) << operation;
    for (const auto& [status, response] : responses->as_object()) {
      const json::value* body = FindPointer(response, "/body");
      if (body == nullptr) continue;  // 202 and 204 carry none
      json::value fixed = *body;
      FixExample(e.kind, fixed);
      ValidationErrors errors = ValidateResponse(e.version, DefinitionName(e.kind), fixed);
      EXPECT_TRUE(errors.errors.empty()) << operation << " " << std::string(status) << "\n" << Dump(errors);
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<Example>& param_info) {
  std::string name = param_info.param.prefix + "_" + param_info.param.version;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(Examples()), ParamName);

// --- Cross-version behaviour -------------------------------------------------------------------

Example StableCluster() { return ExampleOf(kStableVersion, Kind::kCluster); }
Example PreviewCluster() { return ExampleOf(kFirstPreview, Kind::kCluster); }

TEST(CrossVersion, StableClusterReadWithFirstPreviewDropsWhatItLacks) {
  Created c = CreateFromExample(StableCluster());
  json::object body = EncodeProperties(kFirstPreview, c.resource);
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

TEST(CrossVersion, FirstPreviewReplaceKeepsFieldsItLacks) {
  Created c = CreateFromExample(StableCluster());
  json::value body = EncodeProperties(kFirstPreview, c.resource);
  testing::Set(body, "/properties/nodeDrainTimeoutMinutes", 45);
  auto replaced = DecodeReplace(kFirstPreview, Kind::kCluster, body, c.resource);
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
  auto decoded = DecodeCreate(kFirstPreview, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(decoded)) << Dump(decoded);
  const Resource& r = std::get<Resource>(decoded);
  EXPECT_FALSE(r.properties.contains("etcd"));
  EXPECT_EQ(r.properties.at("version").at("channelGroup"), "stable");
}

// The real service has no default OpenShift version in any api-version, 2024-06-10-preview (whose
// document makes version.id optional) included: a create without one is refused.
TEST(CrossVersion, PreviewCreateWithoutVersionIdIsRefused) {
  for (Kind kind : {Kind::kCluster, Kind::kNodePool}) {
    json::value doc = LoadJson(ExamplePath(ExampleOf(kFirstPreview, kind), "CreateOrUpdate"));
    json::value body = *FindPointer(doc, "/parameters/resource");
    FixExample(kind, body);
    testing::Erase(body, "/properties/version/id");
    auto decoded = DecodeCreate(kFirstPreview, kind, body);
    ASSERT_FALSE(std::holds_alternative<Resource>(decoded));
    const auto& errors = std::get<ValidationErrors>(decoded).errors;
    ASSERT_EQ(errors.size(), 1u) << Dump(decoded);
    EXPECT_EQ(errors[0].code, kInvalidRequestContent);
    EXPECT_EQ(errors[0].target, "properties.version.id");
  }
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
  EXPECT_TRUE(IsSupportedVersion(kFirstPreview));
  EXPECT_FALSE(IsSupportedVersion("2024-06-10"));
  EXPECT_EQ(SupportedVersions(),
            (std::vector<std::string>{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview",
                                      "2026-09-01-preview", "2026-10-01"}));
  EXPECT_EQ(SupportedVersionsText(),
            "2026-10-01, 2026-09-01-preview, 2026-06-30-preview, 2025-12-23-preview, 2024-06-10-preview");
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
