#include <gtest/gtest.h>

#include "simulator/search.h"

namespace hcprp::simulator {
namespace {

json::object Obj(std::string_view text) { return ParseJson(text)->as_object(); }

TEST(Search, EqualityAndConjunction) {
  auto o =
      Obj(R"({"name":"Alpha","azure":{"subscription_id":"SUB-1","resource_group_name":"rg"},"replicas":3})");
  auto e = ParseSearch("azure.subscription_id = 'sub-1' and name='alpha'");
  ASSERT_TRUE(e.ok()) << e.error().ToString();
  EXPECT_TRUE(Matches(*e, o));
  EXPECT_FALSE(Matches(*ParseSearch("name = 'beta'"), o));
  EXPECT_TRUE(Matches(*ParseSearch("replicas = 3"), o));
  EXPECT_TRUE(Matches(*ParseSearch("name != 'beta'"), o));
  EXPECT_TRUE(Matches(*ParseSearch(""), o));
  EXPECT_FALSE(Matches(*ParseSearch("missing.field = 'x'"), o));
}

TEST(Search, LikeAndIn) {
  auto o = Obj(R"({"name":"my-cluster-1"})");
  EXPECT_TRUE(Matches(*ParseSearch("name like 'my-%'"), o));
  EXPECT_TRUE(Matches(*ParseSearch("name LIKE '%-_'"), o));
  EXPECT_FALSE(Matches(*ParseSearch("name like 'other%'"), o));
  EXPECT_TRUE(Matches(*ParseSearch("name not like 'other%'"), o));
  EXPECT_TRUE(Matches(*ParseSearch("name in ('a', 'my-cluster-1')"), o));
  EXPECT_FALSE(Matches(*ParseSearch("name in ('a','b')"), o));
}

TEST(Search, QuotesAndErrors) {
  auto o = Obj(R"({"name":"it's"})");
  EXPECT_TRUE(Matches(*ParseSearch("name = 'it''s'"), o));
  EXPECT_FALSE(ParseSearch("name = 'open").ok());
  EXPECT_FALSE(ParseSearch("name 'x'").ok());
  EXPECT_FALSE(ParseSearch("name = 'x' or name = 'y'").ok());
  EXPECT_FALSE(ParseSearch("= 'x'").ok());
}

}  // namespace
}  // namespace hcprp::simulator
