#include "core/azure_resource_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace hcprp {
namespace {

using ::testing::HasSubstr;

TEST(AzureResourceId, SplitsIntoViews) {
  const std::string text =
      "/SUBSCRIPTIONS/S/resourcegroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N/";
  AzureResourceId parsed;
  Status status = ParseAzureResourceId(text, parsed);
  ASSERT_TRUE(status.ok()) << status.error().message();
  const AzureResourceId* id = &parsed;
  EXPECT_EQ(id->subscription, "S");
  EXPECT_EQ(id->resource_group, "G");
  EXPECT_EQ(id->provider_namespace, "Microsoft.Network");
  ASSERT_EQ(id->resources.size(), 2u);
  EXPECT_EQ(id->resources[0].type, "virtualNetworks");
  EXPECT_EQ(id->resources[0].name, "V");
  EXPECT_EQ(id->resources[1].type, "subnets");
  EXPECT_EQ(id->resources[1].name, "N");
  // Views into the text, not copies.
  EXPECT_GE(id->subscription.data(), text.data());
  EXPECT_LT(id->subscription.data(), text.data() + text.size());
}

TEST(AzureResourceId, GroupAndSubscriptionScopes) {
  AzureResourceId id;
  ASSERT_TRUE(
      ParseAzureResourceId("/subscriptions/S/providers/Microsoft.Network/virtualNetworks/V", id).ok());
  EXPECT_EQ(id.resource_group, "");
  EXPECT_EQ(id.resources.size(), 1u);

  // The same variable again: nothing of the previous ID is left.
  ASSERT_TRUE(ParseAzureResourceId("/subscriptions/S/resourceGroups/G", id).ok());
  EXPECT_EQ(id.resource_group, "G");
  EXPECT_EQ(id.provider_namespace, "");
  EXPECT_TRUE(id.resources.empty());

  ASSERT_TRUE(ParseAzureResourceId("/subscriptions/S", id).ok());
  EXPECT_EQ(id.subscription, "S");
  EXPECT_EQ(id.resource_group, "");
}

TEST(AzureResourceId, MalformedIdsSayWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "must start with '/'"},
      {"subscriptions/S", "must start with '/'"},
      {"/tenants/T", "must start with '/subscriptions/'"},
      {"/subscriptions/", "must start with '/subscriptions/'"},
      {"/subscriptions/S//resourceGroups/G", "has an empty segment"},
      {"/subscriptions/S/resourceGroups/G//", "has an empty segment"},
      {"/subscriptions/S/resourceGroups", "is not a provider resource ID"},
      {"/subscriptions/S/resourceGroups/G/providers/Microsoft.Network", "is not a provider resource ID"},
      {"/subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks",
       "is not a provider resource ID"},
      {"/subscriptions/S/resourceGroups/G/things/Microsoft.Network/virtualNetworks/V",
       "is not a provider resource ID"},
  };
  for (const auto& [text, why] : cases) {
    AzureResourceId id;
    Status parsed = ParseAzureResourceId(text, id);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.error().message().find(why), std::string::npos)
        << text << ": " << parsed.error().message();
  }
}

TEST(AzureResourceId, TenantLevelIdsOnlyWhereAnyScopeIsAllowed) {
  AzureResourceId id;
  const std::string_view text = "/providers/Microsoft.Management/managementGroups/M";
  Status strict = ParseAzureResourceId(text, id);
  ASSERT_FALSE(strict.ok());
  EXPECT_THAT(strict.error().message(), HasSubstr("must start with '/subscriptions/'"));
  ASSERT_TRUE(ParseAzureResourceId(text, id, ResourceIdScope::kAny).ok());
  EXPECT_EQ(id.subscription, "");
  EXPECT_EQ(id.provider_namespace, "Microsoft.Management");
  EXPECT_EQ(ResourceTypeOf(id), "Microsoft.Management/managementGroups");
  Status loose = ParseAzureResourceId("/tenants/T", id, ResourceIdScope::kAny);
  ASSERT_FALSE(loose.ok());
  EXPECT_THAT(loose.error().message(), HasSubstr("must start with '/subscriptions/' or '/providers/'"));
  EXPECT_FALSE(ParseAzureResourceId("/providers", id, ResourceIdScope::kAny).ok());
  EXPECT_FALSE(ParseAzureResourceId("/providers/Microsoft.Management", id, ResourceIdScope::kAny).ok());
}

TEST(AzureResourceId, TypeOfNestedResources) {
  AzureResourceId id;
  ASSERT_TRUE(
      ParseAzureResourceId(
          "/subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N", id)
          .ok());
  EXPECT_EQ(ResourceTypeOf(id), "Microsoft.Network/virtualNetworks/subnets");
  ASSERT_TRUE(ParseAzureResourceId("/subscriptions/S/resourceGroups/G", id).ok());
  EXPECT_EQ(ResourceTypeOf(id), "");
}

}  // namespace
}  // namespace hcprp
