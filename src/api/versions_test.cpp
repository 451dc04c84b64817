// Cross-version behaviour: round trips through every ordered pair of api-versions, and what each
// version adds or changes (required fields, status, create-only and updatable fields).
#include <gtest/gtest.h>

#include "api/api.h"
#include "api/schema.h"
#include "api/test_util.h"

namespace hcprp::api {
namespace {

using testing::Created;
using testing::CreateFromExample;
using testing::Dump;
using testing::Example;
using testing::ExampleOf;
using testing::ExamplePath;
using testing::FixExample;
using testing::LoadJson;
using testing::OnTheWire;

constexpr std::string_view k20251223 = "2025-12-23-preview";
constexpr std::string_view k20260630 = "2026-06-30-preview";
constexpr std::string_view k20260901 = "2026-09-01-preview";

struct Pair {
  std::string a;  // the version that creates and reads back
  std::string b;  // the version that writes in between
  Kind kind;
};

std::vector<Pair> Pairs() {
  std::vector<Pair> out;
  for (const ApiVersion& a : ApiVersions()) {
    for (const ApiVersion& b : ApiVersions()) {
      for (Kind kind : {Kind::kCluster, Kind::kNodePool, Kind::kExternalAuth}) {
        out.push_back({std::string(a.name), std::string(b.name), kind});
      }
    }
  }
  return out;
}

std::string PairName(const ::testing::TestParamInfo<Pair>& info) {
  std::string name =
      std::string(DefinitionName(info.param.kind)) + "_" + info.param.a + "_via_" + info.param.b;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

class RoundTripTest : public ::testing::TestWithParam<Pair> {
 protected:
  // Created with A at the richest body A allows: A's example with every property A declares and the
  // example leaves out or at its default set to a value of its own, and the read-only values A's
  // example response shows.
  Created CreateWithA() {
    const Pair& p = GetParam();
    Example e = ExampleOf(p.a, p.kind);
    json::value doc = LoadJson(ExamplePath(e, "CreateOrUpdate"));
    json::value body = *FindPointer(doc, "/parameters/resource");
    FixExample(p.kind, body);
    Enrich(p.kind, body);
    SchemaSet::ForVersion(p.a)->Prune(DefinitionName(p.kind), body);
    auto decoded = DecodeCreate(p.a, p.kind, body);
    EXPECT_TRUE(std::holds_alternative<Resource>(decoded)) << Dump(decoded) << json::serialize(body);
    if (!std::holds_alternative<Resource>(decoded))
      return {Resource{p.kind, "", {}, std::nullopt, {}, {}}, {}};
    const json::value& response = *FindPointer(doc, "/responses/200/body");
    Created c{std::get<Resource>(decoded), testing::EnvelopeOf(response)};
    c.resource.observed = ObservedFromWire(p.a, p.kind, response);
    return c;
  }

  // Sets the optional properties some version declares to values that are not their defaults; the
  // caller prunes what the creating version does not declare.
  static void Enrich(Kind kind, json::value& body) {
    constexpr std::string_view kAcrIdentity =
        "/subscriptions/FDEA43EA-0230-4A7D-BDEE-F3AFF2183B1D/resourceGroups/rgopenapi/providers/"
        "Microsoft.ManagedIdentity/userAssignedIdentities/acrPull";
    switch (kind) {
      case Kind::kCluster:
        testing::Set(body, "/properties/cryptoRestrictions", "FIPS");
        testing::Set(body, "/properties/ingress/type", "Private");
        testing::Set(body, "/properties/platform/containerRegistry/managedIdentity",
                     json::value(kAcrIdentity));
        testing::Set(body, "/properties/etcd/dataEncryption/customerManaged/kms/visibility", "Private");
        testing::Set(body, "/properties/etcd/dataEncryption/customerManaged/kms/keyVaultType", "ManagedHSM");
        break;
      case Kind::kNodePool:
        testing::Set(body, "/properties/platform/osDisk/diskType", "Ephemeral");
        break;
      case Kind::kExternalAuth:
        break;
    }
  }

  // What a client of B gets from a GET.
  json::value GetWithB(const Created& c) {
    return OnTheWire(EncodeResource(GetParam().b, c.resource, c.envelope));
  }

  // Nothing A set was lost: A reads the same body, and the stored form is the same.
  void ExpectNothingLost(const Created& before, const Resource& after) {
    const std::string& a = GetParam().a;
    EXPECT_EQ(after.properties, before.resource.properties);
    EXPECT_EQ(after.identity, before.resource.identity);
    EXPECT_EQ(after.location, before.resource.location);
    json::object read_before = EncodeResource(a, before.resource, before.envelope);
    json::object read_after = EncodeResource(a, after, before.envelope);
    EXPECT_EQ(read_after.at("properties"), read_before.at("properties")) << json::serialize(read_after);
  }
};

TEST_P(RoundTripTest, PutOfTheGetBodyThroughAnotherVersionLosesNothing) {
  const Pair& p = GetParam();
  Created c = CreateWithA();
  json::value body = GetWithB(c);
  if (p.kind != Kind::kExternalAuth) testing::Set(body, "/tags/roundTrip", json::value(p.b));
  DecodeOptions options;
  options.current_provisioning_state = "Succeeded";  // the GET body carries it
  auto replaced = DecodeReplace(p.b, p.kind, body, c.resource, options);
  ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << Dump(replaced) << json::serialize(body);
  const Resource& r = std::get<Resource>(replaced);
  ExpectNothingLost(c, r);
  if (p.kind != Kind::kExternalAuth) {
    EXPECT_EQ(r.tags.at("roundTrip"), json::value(p.b));
  }
}

TEST_P(RoundTripTest, PatchOfEverythingPatchableThroughAnotherVersionLosesNothing) {
  const Pair& p = GetParam();
  Created c = CreateWithA();
  // The GET body of B cut down to what B's PATCH body declares, every value as it is now.
  json::value patch = GetWithB(c);
  const SchemaSet* b = SchemaSet::ForVersion(p.b);
  ASSERT_NE(b, nullptr);
  b->StripReadOnly(UpdateDefinitionName(p.kind), patch);
  b->Prune(UpdateDefinitionName(p.kind), patch);
  ASSERT_TRUE(patch.as_object().contains("properties")) << json::serialize(patch);
  if (p.kind != Kind::kExternalAuth) testing::Set(patch, "/tags/roundTrip", json::value(p.b));
  auto patched = DecodePatch(p.b, p.kind, patch, c.resource);
  ASSERT_TRUE(std::holds_alternative<Resource>(patched)) << Dump(patched) << json::serialize(patch);
  const Resource& r = std::get<Resource>(patched);
  ExpectNothingLost(c, r);
  if (p.kind != Kind::kExternalAuth) {
    EXPECT_EQ(r.tags.at("roundTrip"), json::value(p.b));
  }
}

TEST_P(RoundTripTest, ReadThroughAnotherVersionIsValid) {
  const Pair& p = GetParam();
  Created c = CreateWithA();
  json::value body = GetWithB(c);
  ValidationErrors errors = ValidateResponse(p.b, DefinitionName(p.kind), body);
  EXPECT_TRUE(errors.errors.empty()) << Dump(errors) << json::serialize(body);
}

INSTANTIATE_TEST_SUITE_P(EveryPair, RoundTripTest, ::testing::ValuesIn(Pairs()), PairName);

// --- What each version adds ------------------------------------------------------------------------

json::value ExampleBody(std::string_view version, Kind kind) {
  json::value doc = LoadJson(ExamplePath(ExampleOf(version, kind), "CreateOrUpdate"));
  json::value body = *FindPointer(doc, "/parameters/resource");
  FixExample(kind, body);
  return body;
}

std::vector<std::string> Targets(const Validated<Resource>& v) {
  std::vector<std::string> out;
  if (const auto* e = std::get_if<ValidationErrors>(&v)) {
    for (const auto& f : e->errors) out.push_back(f.code + " " + f.target);
  }
  return out;
}

TEST(VersionRules, VnetIntegrationSubnetAndVersionIdAreRequiredFrom20251223) {
  for (const ApiVersion& v : ApiVersions()) {
    json::value body = ExampleBody(v.name, Kind::kCluster);
    testing::Erase(body, "/properties/version/id");
    if (FindPointer(body, "/properties/platform/vnetIntegrationSubnetId") != nullptr) {
      testing::Erase(body, "/properties/platform/vnetIntegrationSubnetId");
    }
    auto decoded = DecodeCreate(v.name, Kind::kCluster, body);
    if (v.legacy_platform_and_kms) {
      // The document makes both optional: the integration subnet is the cluster subnet, and the
      // version is required by the service's own rules, as in every version.
      EXPECT_EQ(Targets(decoded), (std::vector<std::string>{"InvalidRequestContent properties.version.id"}))
          << v.name << "\n"
          << Dump(decoded);
      continue;
    }
    EXPECT_EQ(Targets(decoded),
              (std::vector<std::string>{"InvalidRequestContent properties.version.id",
                                        "InvalidRequestContent properties.platform.vnetIntegrationSubnetId"}))
        << v.name << "\n"
        << Dump(decoded);
  }
}

TEST(VersionRules, NodePoolVersionIdIsRequiredInEveryVersion) {
  for (const ApiVersion& v : ApiVersions()) {
    json::value body = ExampleBody(v.name, Kind::kNodePool);
    testing::Erase(body, "/properties/version/id");
    auto decoded = DecodeCreate(v.name, Kind::kNodePool, body);
    EXPECT_EQ(Targets(decoded), (std::vector<std::string>{"InvalidRequestContent properties.version.id"}))
        << v.name << "\n"
        << Dump(decoded);
  }
}

TEST(VersionRules, StatusConditionsAppearFrom20260630OnEveryKind) {
  for (Kind kind : {Kind::kCluster, Kind::kNodePool, Kind::kExternalAuth}) {
    Created c = CreateFromExample(ExampleOf(kStableVersion, kind));
    ASSERT_TRUE(c.resource.observed.contains("status"));
    for (const ApiVersion& v : ApiVersions()) {
      json::value body = OnTheWire(EncodeResource(v.name, c.resource, c.envelope));
      const json::value* conditions = FindPointer(body, "/properties/status/conditions");
      EXPECT_EQ(conditions != nullptr, v.status_conditions) << v.name << " " << DefinitionName(kind);
      const json::value* single = FindPointer(body, "/properties/condition");
      EXPECT_EQ(single != nullptr, kind == Kind::kExternalAuth && v.external_auth_single_condition) << v.name;
      EXPECT_EQ(FindPointer(body, "/properties/status/activeVersions") != nullptr,
                v.status_active_versions && kind != Kind::kExternalAuth)
          << v.name << " " << DefinitionName(kind);
      EXPECT_TRUE(ValidateResponse(v.name, DefinitionName(kind), body).errors.empty()) << v.name;
    }
  }
}

TEST(VersionRules, SingleConditionReasonBecomesCamelCase) {
  Created c = CreateFromExample(ExampleOf(kFirstPreview, Kind::kExternalAuth));
  const json::value observed = c.resource.observed;
  EXPECT_EQ(*FindPointer(observed, "/status/conditions/0/reason"), "AGoodReason");
  json::value stable = OnTheWire(EncodeResource(kStableVersion, c.resource, c.envelope));
  EXPECT_TRUE(ValidateResponse(kStableVersion, "ExternalAuth", stable).errors.empty());
}

TEST(VersionRules, CryptoRestrictionsIsCreateOnly) {
  for (std::string_view version : {k20260630, k20260901, kStableVersion}) {
    json::value body = ExampleBody(version, Kind::kCluster);
    testing::Set(body, "/properties/cryptoRestrictions", "FIPS");
    auto created = DecodeCreate(version, Kind::kCluster, body);
    ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
    const Resource& existing = std::get<Resource>(created);
    EXPECT_EQ(existing.properties.at("cryptoRestrictions"), "FIPS");
    testing::Set(body, "/properties/cryptoRestrictions", "None");
    EXPECT_EQ(Targets(DecodeReplace(version, Kind::kCluster, body, existing)),
              (std::vector<std::string>{"InvalidRequestContent properties.cryptoRestrictions"}))
        << version;
    // Left out of a PUT, it keeps its value; a PATCH body does not declare it.
    testing::Erase(body, "/properties/cryptoRestrictions");
    auto kept = DecodeReplace(version, Kind::kCluster, body, existing);
    ASSERT_TRUE(std::holds_alternative<Resource>(kept)) << Dump(kept);
    EXPECT_EQ(std::get<Resource>(kept).properties.at("cryptoRestrictions"), "FIPS");
    auto patch = testing::Parse(R"({"properties": {"cryptoRestrictions": "None"}})");
    EXPECT_EQ(Targets(DecodePatch(version, Kind::kCluster, patch, existing)),
              (std::vector<std::string>{"InvalidRequestContent properties.cryptoRestrictions"}))
        << version;
  }
}

TEST(VersionRules, EtcdKeyVersionIsUpdatableFrom20260630) {
  constexpr const char* kPatch =
      R"({"properties": {"etcd": {"dataEncryption": {"customerManaged": {"kms": {"activeKey": {"version": "v2"}}}}}}})";
  Created c = CreateFromExample(ExampleOf(kStableVersion, Kind::kCluster));
  for (const ApiVersion& v : ApiVersions()) {
    auto patched = DecodePatch(v.name, Kind::kCluster, testing::Parse(kPatch), c.resource);
    const bool updatable = v.name >= k20260630;  // api-version names sort by date
    if (updatable) {
      ASSERT_TRUE(std::holds_alternative<Resource>(patched)) << v.name << Dump(patched);
      EXPECT_EQ(*FindPointer(json::value(std::get<Resource>(patched).properties),
                             "/etcd/dataEncryption/customerManaged/kms/activeKey/version"),
                "v2");
    } else {
      EXPECT_EQ(Targets(patched), (std::vector<std::string>{"InvalidRequestContent properties.etcd"}))
          << v.name;
    }
    // A PUT through the version changes it only where the version says it may.
    json::value body = OnTheWire(EncodeProperties(v.name, c.resource));
    testing::Set(body, "/properties/etcd/dataEncryption/customerManaged/kms/activeKey/version", "v2");
    auto replaced = DecodeReplace(v.name, Kind::kCluster, body, c.resource);
    if (updatable) {
      EXPECT_TRUE(std::holds_alternative<Resource>(replaced)) << v.name << Dump(replaced);
    } else {
      EXPECT_EQ(
          Targets(replaced),
          (std::vector<std::string>{"InvalidRequestContent "
                                    "properties.etcd.dataEncryption.customerManaged.kms.activeKey.version"}))
          << v.name;
    }
  }
}

TEST(VersionRules, ClusterVersionIsUpdatableThroughEveryVersion) {
  // 2024-06-10-preview's document marks version.id create-only; upgrades go through every version.
  Created c = CreateFromExample(ExampleOf(kStableVersion, Kind::kCluster));
  for (const ApiVersion& v : ApiVersions()) {
    auto patched = DecodePatch(v.name, Kind::kCluster,
                               testing::Parse(R"({"properties": {"version": {"id": "4.21"}}})"), c.resource);
    ASSERT_TRUE(std::holds_alternative<Resource>(patched)) << v.name << Dump(patched);
    EXPECT_EQ(std::get<Resource>(patched).properties.at("version").at("id"), "4.21") << v.name;
  }
  // Left out of a 2024-06-10-preview PUT, where it is optional, it keeps its value.
  json::value body = OnTheWire(EncodeProperties(kFirstPreview, c.resource));
  testing::Erase(body, "/properties/version/id");
  auto replaced = DecodeReplace(kFirstPreview, Kind::kCluster, body, c.resource);
  ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << Dump(replaced);
  EXPECT_EQ(std::get<Resource>(replaced).properties.at("version").at("id"),
            c.resource.properties.at("version").at("id"));
}

TEST(VersionRules, KeyManagementModeIsRequiredFrom20260630) {
  for (const ApiVersion& v : ApiVersions()) {
    json::value body = ExampleBody(v.name, Kind::kCluster);
    testing::Erase(body, "/properties/etcd/dataEncryption/keyManagementMode");
    auto decoded = DecodeCreate(v.name, Kind::kCluster, body);
    if (v.platform_managed_etcd) {
      // The mode defaults to PlatformManaged: the customer-managed key given is not used.
      ASSERT_TRUE(std::holds_alternative<Resource>(decoded)) << v.name << Dump(decoded);
      EXPECT_FALSE(std::get<Resource>(decoded).properties.contains("etcd")) << v.name;
    } else {
      // Without a mode the customer-managed key is also out of place, as the service reports.
      EXPECT_EQ(
          Targets(decoded),
          (std::vector<std::string>{"InvalidRequestContent properties.etcd.dataEncryption.keyManagementMode",
                                    "InvalidRequestContent properties.etcd.dataEncryption.customerManaged"}))
          << v.name;
    }
  }
}

TEST(VersionRules, PlatformManagedEtcdShowsWhereItIsTheDefault) {
  json::value body = ExampleBody(kStableVersion, Kind::kCluster);
  testing::Erase(body, "/properties/etcd");
  auto created = DecodeCreate(kStableVersion, Kind::kCluster, body);
  ASSERT_TRUE(std::holds_alternative<Resource>(created)) << Dump(created);
  const Resource& existing = std::get<Resource>(created);
  for (const ApiVersion& v : ApiVersions()) {
    json::value got = OnTheWire(EncodeProperties(v.name, existing));
    const json::value* mode = FindPointer(got, "/properties/etcd/dataEncryption/keyManagementMode");
    if (v.platform_managed_etcd) {
      ASSERT_NE(mode, nullptr) << v.name;
      EXPECT_EQ(*mode, "PlatformManaged");
    } else {
      EXPECT_EQ(mode, nullptr) << v.name;
    }
    auto replaced = DecodeReplace(v.name, Kind::kCluster, got, existing);
    ASSERT_TRUE(std::holds_alternative<Resource>(replaced)) << v.name << Dump(replaced);
    EXPECT_EQ(std::get<Resource>(replaced).properties, existing.properties) << v.name;
  }
}

TEST(VersionRules, OsDiskSizeAbove4095IsRejectedThroughEveryVersion) {
  for (const ApiVersion& v : ApiVersions()) {
    json::value body = ExampleBody(v.name, Kind::kNodePool);
    testing::Set(body, "/properties/platform/osDisk/sizeGiB", 4096);
    auto decoded = DecodeCreate(v.name, Kind::kNodePool, body);
    // Older versions declare no maximum; the canonical model does, and says so.
    EXPECT_EQ(Targets(decoded),
              (std::vector<std::string>{"InvalidRequestContent properties.platform.osDisk.sizeGiB"}))
        << v.name << Dump(decoded);
  }
}

TEST(VersionRules, TableListsEveryVersionOnce) {
  std::vector<std::string> names = SupportedVersions();
  ASSERT_EQ(names.size(), 5u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(FindApiVersion("2026-10-01")->stable, true);
  EXPECT_EQ(FindApiVersion(k20260901)->credential_request_takes_csr, true);
  EXPECT_EQ(FindApiVersion(k20260630)->credential_request_takes_csr, false);
  EXPECT_EQ(FindApiVersion(k20251223)->status_conditions, false);
  EXPECT_EQ(FindApiVersion("2026-10-02"), nullptr);
}

}  // namespace
}  // namespace hcprp::api
