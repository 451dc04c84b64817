#include "core/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace hcprp {
namespace {

TEST(WorkerPoolTest, EveryIterationRunsOnceInEveryLoop) {
  WorkerPool pool(4);
  EXPECT_EQ(pool.threads(), 4u);
  for (size_t count : {0, 1, 2, 7, 100, 1000}) {
    std::vector<std::atomic<int>> runs(count);
    pool.ForEach(count, [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t i = 0; i < count; ++i) EXPECT_EQ(runs[i].load(), 1) << "iteration " << i << " of " << count;
  }
}

TEST(WorkerPoolTest, IterationsRunAtOnceOnThePoolsThreads) {
  WorkerPool pool(4);
  // Each iteration waits until four run at once: only four threads running them together return.
  std::atomic<int> inside{0};
  std::set<std::thread::id> ids;
  Mutex mu;
  pool.ForEach(4, [&](size_t) {
    {
      MutexLock lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    inside.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (inside.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  EXPECT_EQ(inside.load(), 4);
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 1u);  // the caller takes part
}

TEST(WorkerPoolTest, ReturnsOnlyOnceEveryCallReturned) {
  WorkerPool pool(3);
  for (int loop = 0; loop < 200; ++loop) {
    std::atomic<int> finished{0};
    pool.ForEach(6, [&](size_t i) {
      if (i % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      finished.fetch_add(1);
    });
    ASSERT_EQ(finished.load(), 6) << "loop " << loop;
  }
}

TEST(WorkerPoolTest, ConcurrentCallersTakeTurns) {
  WorkerPool pool(3);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int loop = 0; loop < 50; ++loop) pool.ForEach(10, [&](size_t) { total.fetch_add(1); });
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 50 * 10);
}

TEST(WorkerPoolTest, OneThreadRunsOnTheCaller) {
  WorkerPool pool(1);
  EXPECT_EQ(pool.threads(), 1u);
  std::set<std::thread::id> ids;
  pool.ForEach(5, [&](size_t) { ids.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
}

}  // namespace
}  // namespace hcprp
