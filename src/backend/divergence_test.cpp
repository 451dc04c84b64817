#include "backend/divergence.h"

#include <gtest/gtest.h>

#include "core/time.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;

const TimePoint kT0 = FromUnixMillis(1'700'000'000'000);

store::Document SavedAt(TimePoint t) {
  store::Document d;
  d.id = "events-b";
  d.timestamp_ms = ToMillis(t.time_since_epoch());
  return d;
}

TEST(RestoreGapTest, SpansFromTheNewestSavedPlaceToTheStart) {
  EXPECT_FALSE(RestoreGapOf({}, kT0).has_value()) << "a new store has nothing to restore from";
  auto gap = RestoreGapOf({SavedAt(kT0 - 1h), SavedAt(kT0 - 10min)}, kT0);
  ASSERT_TRUE(gap.has_value());
  EXPECT_EQ(gap->since, kT0 - 10min - kGapMargin);
  EXPECT_EQ(gap->until, kT0);
  EXPECT_TRUE(gap->Contains(kT0 - 10min)) << "creation times are stated to the second";
  EXPECT_FALSE(gap->Contains(kT0 - 10min - kGapMargin));
  EXPECT_TRUE(gap->Contains(kT0 - 5min));
  EXPECT_TRUE(gap->Contains(kT0));
  EXPECT_FALSE(gap->Contains(kT0 + 1ms)) << "made while this backend runs: its document came first";
  EXPECT_FALSE(RestoreGapOf({SavedAt(kT0)}, kT0).has_value());
}

TEST(DecideUnknownObjectTest, MadeInTheGapIsHeldWhateverItsAge) {
  const RestoreGap gap{kT0 - 2h, kT0};
  const TimePoint now = kT0 + 3h;
  EXPECT_EQ(DecideUnknownObject(kT0 - 1h, now, gap, 1h, now), UnknownObjectAction::kHold);
  EXPECT_EQ(DecideUnknownObject(kT0 - 1h, now - 5h, gap, 1h, now), UnknownObjectAction::kHold);
}

TEST(DecideUnknownObjectTest, OutsideTheGapItIsCollectedAfterTheWindow) {
  const RestoreGap gap{kT0 - 2h, kT0};
  EXPECT_EQ(DecideUnknownObject(kT0 - 3h, kT0 + 1h, gap, 1h, kT0 + 1h), UnknownObjectAction::kCollect);
  EXPECT_EQ(DecideUnknownObject(kT0 + 10min, kT0 + 10min, gap, 1h, kT0 + 30min), UnknownObjectAction::kWait);
  EXPECT_EQ(DecideUnknownObject(kT0 + 10min, kT0 + 10min, gap, 1h, kT0 + 70min),
            UnknownObjectAction::kCollect);
  EXPECT_EQ(DecideUnknownObject(kT0 - 3h, kT0 - 3h, std::nullopt, 1h, kT0), UnknownObjectAction::kCollect)
      << "without a gap nothing is held";
  // Without a creation time the first sighting counts, and nothing is held.
  EXPECT_EQ(DecideUnknownObject(std::nullopt, kT0 - 1h, gap, 1h, kT0 + 1s), UnknownObjectAction::kCollect);
  EXPECT_EQ(DecideUnknownObject(std::nullopt, kT0, gap, 1h, kT0 + 1s), UnknownObjectAction::kWait);
}

TEST(FollowsServiceDeleteTest, OnlyAnIdleResourceOfThatObjectBeingDeletedOrGone) {
  arm::ResourceDocument doc;
  doc.internal_id = "/api/clusters_mgmt/v1/clusters/c1";
  EXPECT_TRUE(FollowsServiceDelete(doc, doc.internal_id, "uninstalling", false));
  EXPECT_TRUE(FollowsServiceDelete(doc, doc.internal_id, "", true));
  EXPECT_FALSE(FollowsServiceDelete(doc, doc.internal_id, "ready", false));
  EXPECT_FALSE(FollowsServiceDelete(doc, "/api/clusters_mgmt/v1/clusters/c2", "uninstalling", false))
      << "another object of the same name";
  doc.active_operation_id = "op";
  EXPECT_FALSE(FollowsServiceDelete(doc, doc.internal_id, "uninstalling", false))
      << "an operation in flight decides by its own check";
  doc.active_operation_id.reset();
  doc.internal_id.clear();
  EXPECT_FALSE(FollowsServiceDelete(doc, "", "", true));
}

TEST(HeldObjectTest, RecordRoundTrips) {
  HeldObject held{"/api/clusters_mgmt/v1/clusters/c1", "/subscriptions/s/resourceGroups/rg/x", "ready",
                  kT0 - 1h, kT0 - 2h};
  auto parsed = ParseHeldObject(HeldObjectBody(held));
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  EXPECT_EQ(parsed->href, held.href);
  EXPECT_EQ(parsed->resource_id, held.resource_id);
  EXPECT_EQ(parsed->state, "ready");
  EXPECT_EQ(parsed->created, held.created);
  EXPECT_EQ(parsed->gap_since, held.gap_since);
  EXPECT_EQ(HeldObjectId(held.href), HeldObjectId("/API/clusters_mgmt/v1/clusters/C1"));
  EXPECT_NE(HeldObjectId(held.href), HeldObjectId("/api/clusters_mgmt/v1/clusters/c2"));
  EXPECT_FALSE(ParseHeldObject(json::object{{"kind", "backendEventPlace"}}).ok());
}

}  // namespace
}  // namespace hcprp::backend
