#include "backend/ownership.h"

#include <gtest/gtest.h>

#include <functional>

#include <map>
#include <memory>
#include <set>

#include "store/forwarding_store.h"

namespace hcprp::backend {
namespace {

using namespace std::chrono_literals;

class ShardedLeasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenStore("sqlite::memory:", {.clock = &clock_});
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    store_ = std::move(s).value();
  }

  std::unique_ptr<ShardedLeases> Make(std::string owner, uint32_t shards = 8) {
    ShardedLeaseOptions o;
    o.owner = std::move(owner);
    o.shards = shards;
    o.ttl = 3000ms;
    return std::make_unique<ShardedLeases>(o, store_.get(), &clock_, logger_);
  }

  // Ticks every backend once per renewal interval for `rounds` intervals.
  void Run(const std::vector<ShardedLeases*>& backends, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      for (ShardedLeases* b : backends) b->Tick();
      clock_.Advance(1000ms);
    }
  }

  // Which backend may write each of `n` partition keys; fails the test on a partition with two.
  std::map<std::string, int> Writers(const std::vector<ShardedLeases*>& backends, int n) {
    std::map<std::string, int> writers;
    for (int k = 0; k < n; ++k) {
      std::string pk = "00000000-0000-0000-0000-" + std::to_string(100000000000 + k);
      for (size_t i = 0; i < backends.size(); ++i) {
        if (!backends[i]->FenceFor(pk)) continue;
        EXPECT_EQ(writers.count(pk), 0u) << pk << " has two writers";
        writers[pk] = static_cast<int>(i);
      }
    }
    return writers;
  }

  FakeClock clock_;
  Logger logger_{std::make_shared<MemoryLogSink>(), &clock_, LogLevel::kDebug, "ownership"};
  std::unique_ptr<store::Store> store_;
};

TEST_F(ShardedLeasesTest, ShardOfIsStableCaseInsensitiveAndSpread) {
  EXPECT_EQ(ShardedLeases::ShardOf("ABC-def", 8), ShardedLeases::ShardOf("abc-DEF", 8));
  EXPECT_EQ(ShardedLeases::ShardOf("anything", 1), 0u);
  std::map<uint32_t, int> counts;
  for (int i = 0; i < 8000; ++i) ++counts[ShardedLeases::ShardOf("sub-" + std::to_string(i), 8)];
  ASSERT_EQ(counts.size(), 8u);
  for (const auto& [shard, n] : counts) {
    EXPECT_GT(n, 800) << "shard " << shard;
    EXPECT_LT(n, 1200) << "shard " << shard;
  }
}

TEST_F(ShardedLeasesTest, ALoneBackendOwnsEverything) {
  auto a = Make("a");
  EXPECT_FALSE(a->Active());
  EXPECT_TRUE(a->Tick());  // gained
  EXPECT_EQ(a->HeldShards(), 8u);
  EXPECT_TRUE(a->Coordinator());
  EXPECT_EQ(Writers({a.get()}, 200).size(), 200u);
}

TEST_F(ShardedLeasesTest, ARestartUnderTheSameNameTakesItsShardsBackAtOnceWithNewFences) {
  auto earlier = Make("a");
  Run({earlier.get()}, 2);  // holds every shard; a renewal changed the leases' etags since they were taken
  ASSERT_EQ(earlier->HeldShards(), 8u);
  const std::string pk = "00000000-0000-0000-0000-000000000001";
  auto old_fence = earlier->FenceFor(pk);
  ASSERT_TRUE(old_fence.has_value());

  // Died without releasing anything: a new process under the same name, well within the lease TTL.
  clock_.Advance(100ms);
  auto restarted = Make("a");
  EXPECT_TRUE(restarted->Tick());
  EXPECT_EQ(restarted->HeldShards(), 8u);
  auto new_fence = restarted->FenceFor(pk);
  ASSERT_TRUE(new_fence.has_value());
  EXPECT_GT(new_fence->fencing_token, old_fence->fencing_token);

  // The earlier process, were it still running, is refused by the store and loses its leases.
  auto refused =
      store_->Batch(store::kResources, pk, {store::WriteOp::Upsert("doc", json::object{})}, &*old_fence);
  EXPECT_FALSE(refused.ok());
  clock_.Advance(1000ms);
  earlier->Tick();
  EXPECT_EQ(earlier->HeldShards(), 0u);
  EXPECT_EQ(Writers({earlier.get(), restarted.get()}, 200).size(), 200u);

  // Another name finds nothing to take back: it waits for the leases as before.
  auto other = Make("b");
  other->Tick();
  EXPECT_EQ(other->HeldShards(), 0u);
}

TEST_F(ShardedLeasesTest, DeadBackendsShardsAreTakenAsSoonAsItsRecordLapses) {
  auto a = Make("a");
  auto b = Make("b");
  // Out of phase: a ticks on the second, b half a second later.
  for (int i = 0; i < 4; ++i) {
    a->Tick();
    clock_.Advance(500ms);
    b->Tick();
    clock_.Advance(500ms);
  }
  ASSERT_EQ(a->HeldShards(), 4u);
  ASSERT_EQ(b->HeldShards(), 4u);
  // b dies after its tick at 3.5 s; a keeps ticking on the second.
  for (int i = 0; i < 3; ++i) {
    a->Tick();
    EXPECT_EQ(a->HeldShards(), 4u);
    if (i < 2) clock_.Advance(1000ms);
  }
  // At 6 s a's next regular tick would be at 7 s; b's record lapses at 6.5 s.
  auto wait = a->NextTickIn();
  EXPECT_LT(wait, 1000ms);
  EXPECT_GE(wait, 500ms);
  clock_.Advance(wait);
  EXPECT_TRUE(a->Tick());
  EXPECT_EQ(a->HeldShards(), 8u);
  EXPECT_EQ(a->NextTickIn(), a->RenewInterval());  // nobody else left to watch
}

TEST_F(ShardedLeasesTest, TwoBackendsSplitTheShardsAndNeverShareAPartition) {
  auto a = Make("a");
  auto b = Make("b");
  Run({a.get()}, 1);
  Run({a.get(), b.get()}, 4);
  EXPECT_EQ(a->LiveMembers(), 2u);
  EXPECT_EQ(a->HeldShards(), 4u);
  EXPECT_EQ(b->HeldShards(), 4u);
  EXPECT_NE(a->Coordinator(), b->Coordinator());
  auto writers = Writers({a.get(), b.get()}, 400);
  EXPECT_EQ(writers.size(), 400u);
  int by_a = 0;
  for (const auto& [pk, i] : writers) by_a += i == 0 ? 1 : 0;
  EXPECT_GT(by_a, 100);
  EXPECT_LT(by_a, 300);
  // Balanced: nothing moves any more.
  Run({a.get(), b.get()}, 5);
  EXPECT_EQ(a->HeldShards(), 4u);
  EXPECT_EQ(b->HeldShards(), 4u);
}

TEST_F(ShardedLeasesTest, ThreeBackendsTakeAFairShareEach) {
  auto a = Make("a");
  auto b = Make("b");
  auto c = Make("c");
  Run({a.get(), b.get(), c.get()}, 6);
  std::multiset<size_t> held{a->HeldShards(), b->HeldShards(), c->HeldShards()};
  EXPECT_EQ(held, (std::multiset<size_t>{2, 3, 3}));
  EXPECT_EQ(Writers({a.get(), b.get(), c.get()}, 300).size(), 300u);
}

TEST_F(ShardedLeasesTest, ADeadBackendsShardsMoveWithinTheLeaseTime) {
  auto a = Make("a");
  auto b = Make("b");
  Run({a.get(), b.get()}, 5);
  ASSERT_EQ(b->HeldShards(), 4u);
  // a dies (stops ticking). Within ttl + one renewal interval b holds everything.
  for (int i = 0; i < 4; ++i) Run({b.get()}, 1);
  EXPECT_EQ(b->HeldShards(), 8u);
  EXPECT_EQ(b->LiveMembers(), 1u);
  EXPECT_TRUE(b->Coordinator());
  EXPECT_FALSE(a->Active());  // by its own clock its leases lapsed too
  EXPECT_EQ(Writers({a.get(), b.get()}, 200).size(), 200u);
}

TEST_F(ShardedLeasesTest, ReleaseHandsShardsOverAtTheNextTick) {
  auto a = Make("a");
  auto b = Make("b");
  Run({a.get(), b.get()}, 5);
  a->Release();
  EXPECT_FALSE(a->Active());
  Run({b.get()}, 1);
  EXPECT_EQ(b->HeldShards(), 8u);
}

TEST_F(ShardedLeasesTest, AStaleFenceIsRefusedByTheStoreAfterTakeover) {
  auto a = Make("a", 1);
  auto b = Make("b", 1);
  Run({a.get()}, 1);
  auto old_fence = a->FenceFor("sub");
  ASSERT_TRUE(old_fence.has_value());
  clock_.Advance(4000ms);  // a stalls past its ttl
  Run({b.get()}, 1);
  ASSERT_TRUE(b->FenceFor("sub").has_value());
  EXPECT_GT(b->FenceFor("sub")->fencing_token, old_fence->fencing_token);
  auto r = store_->Batch(store::kResources, "sub", {store::WriteOp::Create("d", json::object{{"x", 1}})},
                         &*old_fence);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().IsPreconditionFailed());
  a->FenceRefused(*old_fence);
  EXPECT_FALSE(a->FenceFor("sub").has_value());
}

// A store whose RenewLease runs `during` before it forwards the call: a renewal that takes long.
class SlowRenewalStore final : public store::ForwardingStore {
 public:
  using store::ForwardingStore::ForwardingStore;
  Result<store::Lease> RenewLease(const store::Lease& lease, std::chrono::milliseconds ttl) override {
    if (during) during();
    return store::ForwardingStore::RenewLease(lease, ttl);
  }
  std::function<void()> during;
};

TEST_F(ShardedLeasesTest, ARenewalAfterAFenceWasRefusedAsLapsedCountsAsGainingTheShard) {
  // The store judges the lease by its own clock: the renewal reached it before the lease expired,
  // while by the backend's clock it lapsed as the renewal took 2.5 s.
  FakeClock store_clock;
  auto opened = store::OpenStore("sqlite::memory:", {.clock = &store_clock});
  ASSERT_TRUE(opened.ok()) << opened.error().ToString();
  SlowRenewalStore slow(opened->get());
  ShardedLeaseOptions o;
  o.owner = "a";
  o.shards = 1;
  o.ttl = 3000ms;
  ShardedLeases a(o, &slow, &clock_, logger_);
  a.Tick();
  ASSERT_TRUE(a.FenceFor("sub").has_value());
  clock_.Advance(1000ms);
  store_clock.Advance(1000ms);
  bool refused_meanwhile = false;
  slow.during = [&] {
    clock_.Advance(2500ms);
    refused_meanwhile = !a.FenceFor("sub").has_value();  // the work asking meanwhile is skipped
  };
  EXPECT_TRUE(a.Tick());  // the renewal: that work must be looked at again
  EXPECT_TRUE(refused_meanwhile);
  EXPECT_TRUE(a.FenceFor("sub").has_value());
  slow.during = nullptr;
  EXPECT_FALSE(a.Tick());  // once only
}

TEST_F(ShardedLeasesTest, TicksBetweenRenewalsDoNotTouchTheStore) {
  auto a = Make("a");
  Run({a.get()}, 2);
  a->Tick();  // what is due now
  auto before = store_->ReadChanges(store::kLocks, "", 1000);
  ASSERT_TRUE(before.ok());
  for (int i = 0; i < 50; ++i) a->Tick();  // same instant: nothing due
  auto after = store_->ReadChanges(store::kLocks, "", 1000);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->changes.size(), before->changes.size());
}

}  // namespace
}  // namespace hcprp::backend
