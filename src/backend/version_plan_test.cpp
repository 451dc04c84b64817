#include "backend/version_plan.h"

#include <gtest/gtest.h>

namespace hcprp::backend {
namespace {

ClusterVersionState Cluster(std::string href, std::string service, std::string stored = "",
                            std::string pk = "p1", std::string group = "fast") {
  std::string etag = stored.empty() ? "" : "etag-" + stored;
  return ClusterVersionState{std::move(href),    std::move(pk),     std::move(group),
                             std::move(service), std::move(stored), std::move(etag)};
}

TEST(VersionPlanTest, TheDesiredVersionIsTheChannelsPickAboveWhatIsStoredAndWhatTheServiceHolds) {
  const ChannelPicks picks{{"fast-4.20", "4.20.16"}, {"fast-4.21", "4.21.3"}, {"stable-4.20", std::nullopt}};
  // No stored version yet: the pick of the Cluster Service's minor.
  EXPECT_EQ(DesiredVersionOf(Cluster("a", "4.20.15"), picks), "4.20.16");
  // Never down: a stored version above the pick stays.
  EXPECT_EQ(DesiredVersionOf(Cluster("a", "4.20.15", "4.20.17"), picks), "4.20.17");
  // A customer's change to the next minor reached the Cluster Service: its minor decides.
  ClusterVersionState moved = Cluster("a", "4.21.1", "4.20.16");
  EXPECT_EQ(DecidingChannel(moved), "fast-4.21");
  EXPECT_EQ(DesiredVersionOf(moved, picks), "4.21.3");
  // A channel without a pick: what is stored or held, the newer.
  EXPECT_EQ(DesiredVersionOf(Cluster("a", "4.20.15", "4.20.14", "p1", "stable"), picks), "4.20.15");
  EXPECT_EQ(DecidingChannel(Cluster("a", "")), "");
}

TEST(VersionPlanTest, WritesRaiseOnlyWhatIsBelowTheDesiredVersionOrderedByPartition) {
  const ChannelPicks picks{{"fast-4.20", "4.20.16"}};
  std::vector<ClusterVersionState> clusters{
      Cluster("c", "4.20.15", "", "p2"),         // none stored: created
      Cluster("b", "4.20.15", "4.20.15", "p1"),  // raised, conditioned on its etag
      Cluster("a", "4.20.16", "4.20.16", "p1"),  // at the pick: nothing
      Cluster("d", "4.20.16", "4.20.15", "p1"),  // stored below the Cluster Service: raised to it
  };
  std::vector<DesiredWrite> w = PlanDesiredWrites(clusters, picks);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].href, "b");
  EXPECT_EQ(w[0].from, "4.20.15");
  EXPECT_EQ(w[0].to, "4.20.16");
  EXPECT_EQ(w[0].etag, "etag-4.20.15");
  EXPECT_TRUE(w[0].raises_service);
  EXPECT_EQ(w[1].href, "d");
  EXPECT_FALSE(w[1].raises_service);  // the Cluster Service holds it already
  EXPECT_EQ(w[2].href, "c");
  EXPECT_EQ(w[2].partition_key, "p2");
  EXPECT_EQ(w[2].etag, "");
  EXPECT_TRUE(w[2].raises_service);
}

TEST(VersionPlanTest, BatchesHoldOnePartitionAndAtMostTheLimit) {
  std::vector<DesiredWrite> writes;
  for (int i = 0; i < 5; ++i)
    writes.push_back(DesiredWrite{"a" + std::to_string(i), "p1", "fast", "", "4.20.16"});
  for (int i = 0; i < 2; ++i)
    writes.push_back(DesiredWrite{"b" + std::to_string(i), "p2", "fast", "", "4.20.16"});
  auto batches = BatchesOf(writes, 2);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].size(), 2u);
  EXPECT_EQ(batches[1].size(), 2u);
  EXPECT_EQ(batches[2].size(), 1u);
  EXPECT_EQ(batches[2].front().href, "a4");
  EXPECT_EQ(batches[3].size(), 2u);
  EXPECT_EQ(batches[3].front().partition_key, "p2");
  EXPECT_TRUE(BatchesOf({}, 2).empty());
  EXPECT_EQ(BatchesOf(writes, 500).size(), 2u);
}

TEST(VersionPlanTest, TriggersAreTheClustersStoredAboveTheClusterService) {
  std::vector<ClusterVersionState> clusters{Cluster("a", "4.20.15", "4.20.16"),
                                            Cluster("b", "4.20.16", "4.20.16"),
                                            Cluster("c", "4.21.1", "4.20.16"), Cluster("d", "4.20.15")};
  auto t = PlanTriggers(clusters);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0]->href, "a");
}

}  // namespace
}  // namespace hcprp::backend
