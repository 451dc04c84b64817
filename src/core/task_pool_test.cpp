// The handler thread pool: growth, idle exit, hand-over and shutdown.
#include "core/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>

namespace hcprp {
namespace {

using namespace std::chrono_literals;

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(TaskPool, GrowsWhileTasksBlockAndShrinksAfterIdling) {
  TaskPool pool(1, 4, 50ms);
  std::latch started(4);
  std::latch release(1);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.Submit([&] {
      started.count_down();
      release.wait();
    }));
  }
  // All four run at once: three extra threads were added for them.
  ASSERT_TRUE(WaitFor([&] { return started.try_wait(); }));
  EXPECT_EQ(pool.Threads(), 4);
  release.count_down();
  // The extra threads leave after idling 50 ms; the core thread stays.
  EXPECT_TRUE(WaitFor([&] { return pool.Threads() == 1; }));
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pool.Submit([&] { ++ran; }));
  EXPECT_TRUE(WaitFor([&] { return ran.load() == 100; }));
}

TEST(TaskPool, HandsTasksToIdleThreadsFromManySubmitters) {
  TaskPool pool(8, 8);
  std::atomic<int> ran{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) EXPECT_TRUE(pool.Submit([&] { ++ran; }));
    });
  }
  for (auto& t : submitters) t.join();
  EXPECT_TRUE(WaitFor([&] { return ran.load() == 8000; }));
  EXPECT_EQ(pool.Threads(), 8);
}

TEST(TaskPool, ShutdownRunsWhatIsQueuedAndRefusesMore) {
  TaskPool pool(1, 1);
  std::latch release(1);
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.Submit([&] { release.wait(); }));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(pool.Submit([&] { ++ran; }));  // queued behind it
  std::thread stopper([&] { pool.Shutdown(); });
  std::this_thread::sleep_for(20ms);
  release.count_down();
  stopper.join();
  EXPECT_EQ(ran.load(), 10);
  EXPECT_FALSE(pool.Submit([&] { ++ran; }));
  EXPECT_EQ(pool.Threads(), 0);
}

TEST(TaskPool, ShutdownWakesIdleThreads) {
  TaskPool pool(4, 8, 10ms);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit([&] { ++ran; }));
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 50; }));
  std::this_thread::sleep_for(30ms);  // extra threads, if any, are leaving or gone
  pool.Shutdown();
  EXPECT_EQ(pool.Threads(), 0);
}

}  // namespace
}  // namespace hcprp
