#include "backend/object_memo.h"

#include <gtest/gtest.h>

namespace hcprp::backend {
namespace {

clusterservice::ServiceObject Named(std::string href, std::string name) {
  clusterservice::ServiceObject o;
  o.href = std::move(href);
  o.name = std::move(name);
  return o;
}

TEST(ObjectMemo, FoundUntilForgotten) {
  ObjectMemo memo;
  EXPECT_FALSE(memo.FoundFor("pk", "op").has_value());
  memo.RememberFound("pk", "op", FoundObject{"/c/1", {}});
  ASSERT_TRUE(memo.FoundFor("pk", "op").has_value());
  EXPECT_EQ(memo.FoundFor("pk", "op")->href, "/c/1");
  EXPECT_FALSE(memo.FoundFor("pk", "other").has_value());
  memo.ForgetFound("pk", "op");
  EXPECT_FALSE(memo.FoundFor("pk", "op").has_value());
}

TEST(ObjectMemo, EndedOperationsAreForgottenWhole) {
  ObjectMemo memo;
  memo.RememberFound("pk", "op", FoundObject{"/c/1", {}});
  memo.MarkDeleteIssued("pk", "op", true);
  EXPECT_TRUE(memo.DeleteIssued("pk", "op"));
  memo.ForgetEnded("pk", "op");
  EXPECT_FALSE(memo.DeleteIssued("pk", "op"));
  EXPECT_FALSE(memo.FoundFor("pk", "op").has_value());
  memo.MarkDeleteIssued("pk", "op", true);
  memo.MarkDeleteIssued("pk", "op", false);
  EXPECT_FALSE(memo.DeleteIssued("pk", "op"));
}

TEST(ObjectMemo, UnclaimedObjectsByNameWhileRecent) {
  ObjectMemo memo;
  const TimePoint now = TimePoint{} + std::chrono::hours(1);
  EXPECT_TRUE(memo.KeepUnclaimed(Named("/c/1", "Alpha"), now - std::chrono::seconds(5), now));
  EXPECT_FALSE(memo.KeepUnclaimed(Named("/c/2", "alpha"),
                                  now - ObjectMemo::kUnclaimedKept - std::chrono::seconds(1), now));
  auto named = memo.UnclaimedNamed("ALPHA");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].href, "/c/1");
  EXPECT_TRUE(memo.UnclaimedNamed("beta").empty());
  memo.DropUnclaimed("/c/1");
  EXPECT_TRUE(memo.UnclaimedNamed("alpha").empty());
}

TEST(ObjectMemo, UnclaimedObjectsExpire) {
  ObjectMemo memo;
  const TimePoint t0 = TimePoint{} + std::chrono::hours(1);
  memo.KeepUnclaimed(Named("/c/1", "a"), t0, t0);
  // Keeping a later object drops those seen longer than kUnclaimedKept before it.
  const TimePoint later = t0 + ObjectMemo::kUnclaimedKept + std::chrono::seconds(1);
  memo.KeepUnclaimed(Named("/c/2", "a"), later, later);
  auto named = memo.UnclaimedNamed("a");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].href, "/c/2");
}

}  // namespace
}  // namespace hcprp::backend
