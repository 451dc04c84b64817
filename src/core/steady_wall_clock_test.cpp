#include "core/steady_wall_clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace hcprp {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

TEST(SteadyWallClock, AdvancesWithTheSteadyClockFromItsAnchor) {
  std::atomic<steady_clock::rep> steady{1000};
  auto now = [&steady] { return steady_clock::time_point(steady_clock::duration(steady.load())); };
  const TimePoint anchor = FakeClock().Now();
  SteadyWallClock clock(anchor, now);
  EXPECT_EQ(clock.Now(), anchor);
  steady += std::chrono::duration_cast<steady_clock::duration>(seconds(3)).count();
  EXPECT_EQ(clock.Now(), anchor + seconds(3));
}

TEST(SteadyWallClock, StartsAtTheMachinesTimeAndNeverGoesBack) {
  const TimePoint before = std::chrono::system_clock::now();
  SteadyWallClock clock;
  const TimePoint first = clock.Now();
  EXPECT_GE(first, before - seconds(1));
  EXPECT_LE(first, std::chrono::system_clock::now() + seconds(1));
  EXPECT_GE(clock.Now(), first);
}

}  // namespace
}  // namespace hcprp
