// The parsers the semantic rules share.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "api/rules_common.h"

namespace hcprp::api::rules {
namespace {

TEST(AzureIds, ParseGivesTypeNameAndParent) {
  auto subnet = ParseAzureId(
      "/subscriptions/S/resourcegroups/G/providers/Microsoft.Network/virtualNetworks/V/subnets/N/");
  ASSERT_TRUE(subnet.id.has_value()) << subnet.error;
  EXPECT_EQ(subnet.id->subscription, "S");
  EXPECT_EQ(subnet.id->resource_group, "G");
  EXPECT_EQ(subnet.id->type, "Microsoft.Network/virtualNetworks/subnets");
  EXPECT_EQ(subnet.id->name, "N");
  EXPECT_EQ(subnet.id->parent,
            "/subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/V");

  auto vnet = ParseAzureId("/SUBSCRIPTIONS/S/providers/Microsoft.Network/virtualNetworks/V");
  ASSERT_TRUE(vnet.id.has_value()) << vnet.error;
  EXPECT_EQ(vnet.id->resource_group, "");
  EXPECT_EQ(vnet.id->type, "Microsoft.Network/virtualNetworks");
  EXPECT_EQ(vnet.id->name, "V");
  EXPECT_EQ(vnet.id->parent, "");

  auto group = ParseAzureId("/subscriptions/S/resourceGroups/G");
  ASSERT_TRUE(group.id.has_value());
  EXPECT_EQ(group.id->name, "G");
  EXPECT_EQ(group.id->type, "");
  auto sub = ParseAzureId("/subscriptions/S");
  ASSERT_TRUE(sub.id.has_value());
  EXPECT_EQ(sub.id->name, "S");
}

TEST(AzureIds, MalformedIdsSayWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "must start with '/'"},
      {"subscriptions/S", "must start with '/'"},
      {"/tenants/T", "must start with '/subscriptions/'"},
      {"/subscriptions/", "must start with '/subscriptions/'"},
      {"/subscriptions/S//resourceGroups/G", "has an empty segment"},
      {"/subscriptions/S/resourceGroups/G/providers/Microsoft.Network", "is not a provider resource ID"},
      {"/subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks",
       "is not a provider resource ID"},
      {"/subscriptions/S/resourceGroups/G/things/Microsoft.Network/virtualNetworks/V",
       "is not a provider resource ID"},
  };
  for (const auto& [text, why] : cases) {
    auto parsed = ParseAzureId(text);
    EXPECT_FALSE(parsed.id.has_value()) << text;
    EXPECT_NE(parsed.error.find(why), std::string::npos) << text << ": " << parsed.error;
  }
}

TEST(KeepMalformedIdsAlone, OnlyTheMalformedIdsRemainWhenThereAreAny) {
  const FieldError required{"InvalidRequestContent", "Required value", "properties.version.id"};
  const FieldError malformed{"InvalidRequestContent", MalformedIdMessage("/invalid1"),
                             "properties.platform.subnetID"};
  std::vector<FieldError> both{required, malformed};
  KeepMalformedIdsAlone(both);
  ASSERT_EQ(both.size(), 1U);
  EXPECT_EQ(both[0].target, "properties.platform.subnetID");
  std::vector<FieldError> none{required};
  KeepMalformedIdsAlone(none);
  EXPECT_EQ(none.size(), 1U);
}

}  // namespace
}  // namespace hcprp::api::rules
