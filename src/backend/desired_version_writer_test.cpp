#include "backend/desired_version_writer.h"

#include <gtest/gtest.h>

#include <atomic>

#include "arm/store_indexes.h"
#include "backend/documents.h"
#include "core/clock.h"
#include "store/forwarding_store.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;

// Owns every partition with one real lease of the store.
class OneLease final : public Ownership {
 public:
  explicit OneLease(store::Lease lease) : lease_(std::move(lease)) {}
  bool Tick() override { return false; }
  bool Active() const override { return true; }
  bool Coordinator() const override { return true; }
  std::optional<store::Lease> FenceFor(std::string_view pk) const override {
    if (pk == "not-owned") return std::nullopt;
    return lease_;
  }
  void FenceRefused(const store::Lease&) override {}
  void Release() override {}
  std::chrono::milliseconds RenewInterval() const override { return 1000ms; }
  size_t HeldShards() const override { return 1; }

 private:
  store::Lease lease_;
};

// Counts the batches the writer commits (from the writer's threads).
class CountingStore final : public store::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  Result<store::BatchResult> Batch(std::string_view container, std::string_view pk,
                                   std::vector<store::WriteOp> ops, const store::Lease* fence) override {
    ++batches;
    return ForwardingStore::Batch(container, pk, std::move(ops), fence);
  }
  std::atomic<int> batches = 0;
};

class DesiredVersionWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenStore("sqlite::memory:", {.clock = &clock_, .indexes = arm::StoreIndexes()});
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::move(s).value();
    auto lease = store_->AcquireLease(store::kLocks, "hcprp-backend", "shard-0", "me", 60s);
    ASSERT_TRUE(lease.ok()) << lease.error().ToString();
    ownership_ = std::make_unique<OneLease>(*lease);
    counting_ = std::make_unique<CountingStore>(store_.get());
  }

  std::string Stored(const std::string& pk, const std::string& href) {
    auto doc = store_->Read(store::kResources, pk, ServiceProviderClusterId(href));
    if (!doc.ok()) return "(" + doc.error().ToString() + ")";
    auto spc = ServiceProviderCluster::FromBody(doc->body);
    return spc ? spc->desired_version : "(unreadable)";
  }

  static DesiredWrite Write(std::string href, std::string pk, std::string to, std::string etag = "") {
    return DesiredWrite{std::move(href), std::move(pk), "fast", "", std::move(to), std::move(etag), true};
  }

  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<OneLease> ownership_;
  std::unique_ptr<CountingStore> counting_;
};

TEST_F(DesiredVersionWriterTest, WritesGoInBatchesOfOnePartition) {
  std::vector<DesiredWrite> writes;
  for (int i = 0; i < 7; ++i) writes.push_back(Write("/c/a" + std::to_string(i), "p1", "4.20.16"));
  for (int i = 0; i < 3; ++i) writes.push_back(Write("/c/b" + std::to_string(i), "p2", "4.20.16"));
  writes.push_back(Write("/c/x", "not-owned", "4.20.16"));
  DesiredVersionWriter writer(counting_.get(), ownership_.get(), 4, 2);
  DesiredCommit c = writer.Commit(writes);
  EXPECT_EQ(c.batches, 3u);  // p1: 4 + 3, p2: 3; none for the partition not owned
  EXPECT_EQ(counting_->batches, 3);
  EXPECT_EQ(c.written.size(), 10u);
  EXPECT_EQ(c.stored.size(), 10u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_EQ(Stored("p1", "/c/a6"), "4.20.16");
  EXPECT_EQ(Stored("p2", "/c/b0"), "4.20.16");
  for (const StoredDesired& s : c.stored) EXPECT_FALSE(s.etag.empty()) << s.href;
}

// Each batch is reported as soon as it committed, before the next one is written.
TEST_F(DesiredVersionWriterTest, EachBatchIsReportedWhenItCommitted) {
  std::vector<DesiredWrite> writes;
  for (int i = 0; i < 3; ++i) writes.push_back(Write("/c/a" + std::to_string(i), "p1", "4.20.16"));
  for (int i = 0; i < 2; ++i) writes.push_back(Write("/c/b" + std::to_string(i), "p2", "4.20.16"));
  DesiredVersionWriter writer(counting_.get(), ownership_.get(), 500, 1);
  std::vector<std::vector<std::string>> reported;
  std::vector<std::string> stored_then;  // what the other partition's first cluster held at the report
  DesiredCommit c = writer.Commit(writes, [&](std::span<const DesiredWrite> batch) {
    std::vector<std::string> hrefs;
    for (const DesiredWrite& w : batch) hrefs.push_back(w.href);
    reported.push_back(hrefs);
    stored_then.push_back(batch.front().partition_key == "p1" ? Stored("p2", "/c/b0")
                                                              : Stored("p1", "/c/a0"));
    EXPECT_EQ(Stored(batch.front().partition_key, batch.back().href), "4.20.16");
  });
  EXPECT_EQ(c.batches, 2u);
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_EQ(reported[0], (std::vector<std::string>{"/c/a0", "/c/a1", "/c/a2"}));
  EXPECT_EQ(reported[1], (std::vector<std::string>{"/c/b0", "/c/b1"}));
  EXPECT_NE(stored_then[0], "4.20.16");  // p2 was not written yet when p1 was reported
  EXPECT_EQ(stored_then[1], "4.20.16");
}

TEST_F(DesiredVersionWriterTest, ALostRaceIsReadAgainAndNeverLowersWhatIsStored) {
  DesiredVersionWriter writer(counting_.get(), ownership_.get(), 500, 1);
  DesiredCommit first = writer.Commit({Write("/c/a", "p1", "4.20.15"), Write("/c/b", "p1", "4.20.15")});
  ASSERT_EQ(first.written.size(), 2u);
  const std::string etag_a = first.stored[0].etag;
  const std::string etag_b = first.stored[1].etag;
  // Another writer moves a to 4.20.17 and b to 4.20.16 after the plan read them.
  ASSERT_TRUE(store_
                  ->Replace(store::kResources, "p1", ServiceProviderClusterId("/c/a"),
                            ServiceProviderCluster{"/c/a", "4.20.17", "fast"}.ToBody())
                  .ok());
  ASSERT_TRUE(store_
                  ->Replace(store::kResources, "p1", ServiceProviderClusterId("/c/b"),
                            ServiceProviderCluster{"/c/b", "4.20.16", "fast"}.ToBody())
                  .ok());
  // And a third was created by someone else meanwhile.
  ASSERT_TRUE(store_
                  ->Create(store::kResources, "p1", ServiceProviderClusterId("/c/c"),
                           ServiceProviderCluster{"/c/c", "4.20.18", "fast"}.ToBody())
                  .ok());
  DesiredCommit second =
      writer.Commit({Write("/c/a", "p1", "4.20.16", etag_a), Write("/c/b", "p1", "4.20.17", etag_b),
                     Write("/c/c", "p1", "4.20.16")});
  EXPECT_EQ(second.failed, 0u);
  ASSERT_EQ(second.written.size(), 1u);  // only b still rose
  EXPECT_EQ(second.written[0].href, "/c/b");
  EXPECT_EQ(Stored("p1", "/c/a"), "4.20.17");
  EXPECT_EQ(Stored("p1", "/c/b"), "4.20.17");
  EXPECT_EQ(Stored("p1", "/c/c"), "4.20.18");
  // What the store holds now is reported, for the next plan.
  std::map<std::string, std::string> latest;
  for (const StoredDesired& s : second.stored) latest[s.href] = s.desired;
  EXPECT_EQ(latest["/c/a"], "4.20.17");
  EXPECT_EQ(latest["/c/c"], "4.20.18");
}

}  // namespace
}  // namespace hcprp::backend
