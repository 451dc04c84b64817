#include "store/fault_injecting_store.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

namespace hcprp::store {
namespace {

using namespace std::chrono_literals;
using M = FaultInjectingStore::Method;
using CP = FaultInjectingStore::CrashPoint;

class FaultInjectingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenStore("sqlite::memory:", {.clock = &clock_});
    ASSERT_TRUE(s.ok());
    inner_ = std::move(*s);
    store_ = std::make_unique<FaultInjectingStore>(*inner_);
  }
  FakeClock clock_;
  std::unique_ptr<Store> inner_;
  std::unique_ptr<FaultInjectingStore> store_;
};

TEST_F(FaultInjectingStoreTest, ForwardsEveryCall) {
  Store& s = *store_;
  auto d = s.Create("c", "p", "a", json::object{{"v", 1}});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(s.Read("c", "p", "a").ok());
  EXPECT_TRUE(s.Replace("c", "p", "a", json::object{{"v", 2}}).ok());
  EXPECT_TRUE(s.Upsert("c", "p", "b", json::object{}).ok());
  EXPECT_TRUE(s.Patch("c", "p", "a", {{PatchOp::Kind::kIncrement, "/v", 1}}).ok());
  EXPECT_TRUE(s.Batch("c", "p", {WriteOp::Read("a")}).ok());
  EXPECT_TRUE(s.Delete("c", "p", "b").ok());
  EXPECT_TRUE(s.Query({.container = "c", .partition_key = "p"}).ok());
  EXPECT_TRUE(s.ListPartitions("c", 10, "").ok());
  // The feed keeps the latest version of "a" and the tombstone of "b" (superseded versions go).
  EXPECT_EQ(s.ReadChanges("c", "", 10)->changes.size(), 2u);
  EXPECT_TRUE(*s.WaitForChanges("c", "", 0ms));
  auto l = s.AcquireLease("l", "p", "n", "me", 1s);
  ASSERT_TRUE(l.ok());
  auto l2 = s.RenewLease(*l, 1s);
  ASSERT_TRUE(l2.ok());
  EXPECT_TRUE(s.ReleaseLease(*l2).ok());
  EXPECT_EQ(*s.PurgeExpired(), 0u);
  EXPECT_EQ(store_->CallCount(), 15u);
  for (size_t i = 0; i < FaultInjectingStore::kMethodCount; ++i) {
    auto m = static_cast<M>(i);
    EXPECT_EQ(store_->CallCount(m), 1u) << StoreMethodName(m);
    EXPECT_EQ(ParseStoreMethod(StoreMethodName(m)), m);
  }
  EXPECT_FALSE(ParseStoreMethod("Nope"));
}

TEST_F(FaultInjectingStoreTest, FailsTheNthCall) {
  store_->FailNthCall(3, Error::Unavailable("db down"));
  EXPECT_TRUE(store_->Create("c", "p", "1", json::object{}).ok());
  EXPECT_TRUE(store_->Read("c", "p", "1").ok());
  auto r = store_->Create("c", "p", "2", json::object{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(inner_->Read("c", "p", "2").error().IsNotFound());    // not forwarded
  EXPECT_TRUE(store_->Create("c", "p", "2", json::object{}).ok());  // one-shot
}

TEST_F(FaultInjectingStoreTest, FailsTheNthCallOfOneMethod) {
  store_->FailNthCall(2, Error::IoError("disk"), M::kBatch);
  EXPECT_TRUE(store_->Batch("c", "p", {WriteOp::Create("a", json::object{})}).ok());
  EXPECT_TRUE(store_->Create("c", "p", "b", json::object{}).ok());  // other methods don't count
  auto r = store_->Batch("c", "p", {WriteOp::Create("c", json::object{})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIoError);
  EXPECT_TRUE(store_->Batch("c", "p", {WriteOp::Create("c", json::object{})}).ok());
  EXPECT_EQ(store_->CallCount(M::kBatch), 3u);
}

TEST_F(FaultInjectingStoreTest, FailAllUntilCleared) {
  store_->FailAllCalls(Error::Unavailable("partition"), M::kRead);
  ASSERT_TRUE(store_->Create("c", "p", "a", json::object{}).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(store_->Read("c", "p", "a").error().code(), ErrorCode::kUnavailable);
  store_->ClearFaults();
  EXPECT_TRUE(store_->Read("c", "p", "a").ok());
}

TEST_F(FaultInjectingStoreTest, DelaysTheNthCall) {
  store_->DelayNthCall(2, 150ms);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(store_->Create("c", "p", "a", json::object{}).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 140ms);
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(store_->Read("c", "p", "a").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
}

TEST_F(FaultInjectingStoreTest, CrashBeforeCommitWritesNothing) {
  int hits = 0;
  store_->SetCrashPoint(CP::kBeforeCommit, [&](M m, CP p) {
    ++hits;
    EXPECT_EQ(m, M::kCreate);
    EXPECT_EQ(p, CP::kBeforeCommit);
  });
  EXPECT_TRUE(store_->Read("c", "p", "a").error().IsNotFound());  // reads are not crash points by default
  auto r = store_->Create("c", "p", "a", json::object{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(hits, 1);
  EXPECT_TRUE(inner_->Read("c", "p", "a").error().IsNotFound());
}

TEST_F(FaultInjectingStoreTest, CrashAfterCommitKeepsTheWriteButLosesTheAnswer) {
  int hits = 0;
  store_->SetCrashPoint(
      CP::kAfterCommit,
      [&](M, CP) {
        ++hits;
        // The write is committed when the hook runs.
        EXPECT_TRUE(inner_->Read("c", "p", "b").ok());
      },
      2, M::kBatch);
  ASSERT_TRUE(store_->Batch("c", "p", {WriteOp::Create("a", json::object{})}).ok());
  auto r = store_->Batch("c", "p", {WriteOp::Create("b", json::object{})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(hits, 1);
  EXPECT_TRUE(inner_->Read("c", "p", "b").ok());
  // A failing call does not reach the after-commit point.
  store_->SetCrashPoint(CP::kAfterCommit, [&](M, CP) { ++hits; });
  EXPECT_TRUE(store_->Create("c", "p", "b", json::object{}).error().IsAlreadyExists());
  EXPECT_EQ(hits, 1);
}

TEST_F(FaultInjectingStoreTest, CrashHookCanEndTheProcess) {
  // In a child process: the hook aborts after the commit; the parent sees the signal.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A fresh store: connections must not cross fork().
    auto s = OpenStore("sqlite::memory:", {.clock = &clock_});
    if (!s.ok()) _exit(1);
    FaultInjectingStore child(std::move(*s));
    child.SetCrashPoint(CP::kAfterCommit,
                        [&](M, CP) { _exit(child.inner().Read("c", "p", "a").ok() ? 42 : 2); });
    (void)child.Create("c", "p", "a", json::object{});
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
}

TEST_F(FaultInjectingStoreTest, OwnsAnInnerStore) {
  auto s = OpenStore("sqlite::memory:", {.clock = &clock_});
  ASSERT_TRUE(s.ok());
  FaultInjectingStore owner(std::move(*s));
  EXPECT_TRUE(owner.Create("c", "p", "a", json::object{}).ok());
  EXPECT_TRUE(owner.inner().Read("c", "p", "a").ok());
}

TEST_F(FaultInjectingStoreTest, ThreadSafe) {
  store_->FailNthCall(50, Error::Unavailable("x"));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if (!store_->Upsert("c", "p", std::to_string(t), json::object{}).ok()) failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 1);
  EXPECT_EQ(store_->CallCount(M::kUpsert), 100u);
}

}  // namespace
}  // namespace hcprp::store
