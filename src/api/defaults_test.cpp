// The default passes of defaults.h, one by one.
#include "api/defaults.h"

#include <gtest/gtest.h>

#include "api/schema.h"
#include "core/time.h"

namespace hcprp::api {
namespace {

json::value Parse(std::string_view text) {
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? std::move(parsed).value() : json::value();
}

const json::value* At(const json::value& v, std::string_view pointer) { return FindPointer(v, pointer); }

TEST(RequestServiceValues, LocationIsTheServicesWhateverTheBodySays) {
  json::value body = Parse(R"({"location":"elsewhere","properties":{}})");
  ApplyServiceValues(Kind::kCluster, ServiceValues{.location = "eastus"}, body);
  EXPECT_EQ(json::serialize(*At(body, "/location")), R"("eastus")");

  json::value absent = Parse(R"({"properties":{}})");
  ApplyServiceValues(Kind::kNodePool, ServiceValues{.location = "eastus"}, absent);
  EXPECT_EQ(json::serialize(*At(absent, "/location")), R"("eastus")");
}

TEST(RequestServiceValues, LocationOfTheWrongTypeIsLeftForTheSchema) {
  json::value body = Parse(R"({"location":5})");
  ApplyServiceValues(Kind::kCluster, ServiceValues{.location = "eastus"}, body);
  EXPECT_EQ(json::serialize(body), R"({"location":5})");
}

TEST(RequestServiceValues, ExternalAuthsAndEmptyLocationsGetNoLocation) {
  json::value auth = Parse(R"({"properties":{}})");
  ApplyServiceValues(Kind::kExternalAuth, ServiceValues{.location = "eastus"}, auth);
  EXPECT_EQ(At(auth, "/location"), nullptr);

  json::value cluster = Parse(R"({"location":"westus"})");
  ApplyServiceValues(Kind::kCluster, ServiceValues{}, cluster);
  EXPECT_EQ(json::serialize(cluster), R"({"location":"westus"})");
}

TEST(RequestServiceValues, ManagedResourceGroupFilledWhenAbsentNullOrEmpty) {
  ServiceValues values{.managed_resource_group = [] { return std::string("arohcp-made"); }};
  for (std::string_view text :
       {R"({"properties":{"platform":{}}})", R"({"properties":{"platform":{"managedResourceGroup":null}}})",
        R"({"properties":{"platform":{"managedResourceGroup":""}}})"}) {
    json::value body = Parse(text);
    ApplyServiceValues(Kind::kCluster, values, body);
    const json::value* group = At(body, "/properties/platform/managedResourceGroup");
    ASSERT_NE(group, nullptr) << text;
    EXPECT_EQ(json::serialize(*group), R"("arohcp-made")") << text;
  }
}

TEST(RequestServiceValues, ManagedResourceGroupGivenIsKeptAndNotMade) {
  int made = 0;
  ServiceValues values{.managed_resource_group = [&made] {
    ++made;
    return std::string("arohcp-made");
  }};
  json::value body = Parse(R"({"properties":{"platform":{"managedResourceGroup":"mine"}}})");
  ApplyServiceValues(Kind::kCluster, values, body);
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/managedResourceGroup")), R"("mine")");
  // Without a platform object the schema reports what is missing; nothing is made up.
  json::value no_platform = Parse(R"({"properties":{}})");
  ApplyServiceValues(Kind::kCluster, values, no_platform);
  EXPECT_EQ(json::serialize(no_platform), R"({"properties":{}})");
  // Node pools have no managed resource group.
  json::value pool = Parse(R"({"properties":{"platform":{}}})");
  ApplyServiceValues(Kind::kNodePool, values, pool);
  EXPECT_EQ(json::serialize(pool), R"({"properties":{"platform":{}}})");
  EXPECT_EQ(made, 0);
}

TEST(RequestServiceValues, NonObjectBodyIsLeftForTheDecode) {
  json::value body = Parse("[1]");
  ApplyServiceValues(Kind::kCluster, ServiceValues{.location = "eastus"}, body);
  EXPECT_EQ(json::serialize(body), "[1]");
}

TEST(RequestServiceValues, ManagedResourceGroupNameKeepsAtMost45CharactersOfTheName) {
  EXPECT_EQ(ManagedResourceGroupName("demo", "u-u"), "arohcp-demo-u-u");
  const std::string long_name(54, 'a');
  EXPECT_EQ(ManagedResourceGroupName(long_name, "u"), "arohcp-" + std::string(45, 'a') + "-u");
}

TEST(RequestServiceValues, SystemDataCompletedWhereArmSentNothing) {
  auto now = ParseRfc3339("2026-01-02T03:04:05Z");
  ASSERT_TRUE(now.ok());
  auto filled = CompleteSystemData(std::nullopt, *now);
  ASSERT_TRUE(filled.has_value());
  EXPECT_EQ(GetString(*filled, "createdBy"), kUnknownActor);
  EXPECT_EQ(GetString(*filled, "createdByType"), "Application");
  EXPECT_EQ(GetString(*filled, "lastModifiedBy"), kUnknownActor);
  EXPECT_EQ(GetString(*filled, "lastModifiedAt"), FormatRfc3339(*now));

  json::object given{{"createdBy", "someone@example.com"}, {"createdByType", "User"}, {"lastModifiedBy", ""}};
  auto kept = CompleteSystemData(given, *now);
  EXPECT_EQ(GetString(*kept, "createdBy"), "someone@example.com");
  EXPECT_EQ(GetString(*kept, "createdByType"), "User");
  EXPECT_EQ(GetString(*kept, "lastModifiedBy"), kUnknownActor);
}

TEST(CanonicalDefaults, MinimalClusterGetsEveryPass) {
  json::value body = Parse(R"({"location":"eastus","properties":{"version":{"id":"4.20"},
    "platform":{"subnetId":"/s"}}})");
  ApplyCanonicalDefaults(kStableVersion, Kind::kCluster, body);
  EXPECT_NE(At(body, "/properties/network"), nullptr);          // materialized
  EXPECT_NE(At(body, "/properties/network/podCidr"), nullptr);  // schema default inside it
  EXPECT_EQ(json::serialize(*At(body, "/properties/version/channelGroup")), R"("stable")");  // prose
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoscaling/maxPodGracePeriodSeconds")), "600");
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoscaling/maxNodeProvisionTimeSeconds")), "900");
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoscaling/podPriorityThreshold")), "-10");
  // The stable version needs no conversion default.
  EXPECT_EQ(At(body, "/properties/platform/vnetIntegrationSubnetId"), nullptr);
}

TEST(CanonicalDefaults, GivenValuesAreKept) {
  json::value body = Parse(R"({"properties":{"version":{"id":"4.20","channelGroup":"fast"},
    "autoscaling":{"podPriorityThreshold":5},"network":{"podCidr":"10.0.0.0/16"}}})");
  ApplyCanonicalDefaults(kStableVersion, Kind::kCluster, body);
  EXPECT_EQ(json::serialize(*At(body, "/properties/version/channelGroup")), R"("fast")");
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoscaling/podPriorityThreshold")), "5");
  EXPECT_EQ(json::serialize(*At(body, "/properties/network/podCidr")), R"("10.0.0.0/16")");
}

TEST(CanonicalDefaults, LegacyVersionGetsConversionDefaultsFirst) {
  json::value body = Parse(R"({"properties":{"platform":{"subnetId":"/s"}}})");
  ApplyCanonicalDefaults("2024-06-10-preview", Kind::kCluster, body);
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/vnetIntegrationSubnetId")), R"("/s")");
  // The version profile the conversion adds is then completed by the prose default.
  EXPECT_EQ(json::serialize(*At(body, "/properties/version/channelGroup")), R"("stable")");
}

TEST(CanonicalDefaults, NodePoolGetsOsDiskAndAutoRepair) {
  json::value body = Parse(R"({"properties":{"platform":{"vmSize":"Standard_D8s_v3"}}})");
  ApplyCanonicalDefaults(kStableVersion, Kind::kNodePool, body);
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoRepair")), "true");
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/osDisk/sizeGiB")), "64");
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/osDisk/diskStorageAccountType")),
            R"("Premium_LRS")");
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/osDisk/diskType")), R"("Managed")");
}

TEST(ComparisonDefaults, WireBodyGetsTheStoredDefaultsOfItsVersion) {
  const SchemaSet* schemas = SchemaSet::ForVersion(kStableVersion);
  ASSERT_NE(schemas, nullptr);
  json::value body = Parse(R"({"properties":{"platform":{"vmSize":"Standard_D8s_v3"}}})");
  ApplyComparisonDefaults(*schemas, Kind::kNodePool, body);
  EXPECT_EQ(json::serialize(*At(body, "/properties/platform/osDisk/sizeGiB")), "64");
  EXPECT_EQ(json::serialize(*At(body, "/properties/autoRepair")), "true");
}

}  // namespace
}  // namespace hcprp::api
