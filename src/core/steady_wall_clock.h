// A wall clock that a step of the machine's clock does not move.
#pragma once

#include <chrono>
#include <functional>
#include <utility>

#include "core/clock.h"

namespace hcprp {

// Wall-clock time as it was when the clock was made, advanced by the steady clock since: a step of the
// machine's clock while the process runs (NTP, an operator, a wrong clock corrected) moves SystemClock
// but not this one. Shard leases and the fences of writes are judged by the time of the process that
// writes them, so a backend whose clock jumped forward would take the others' leases before they
// expire, and one whose clock jumped back would write expiries the others read as long past; with this
// clock neither happens. It drifts only as the steady clock does, and follows a step of the machine's
// clock when the process restarts. Thread-safe.
class SteadyWallClock final : public Clock {
 public:
  using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

  SteadyWallClock()
      : SteadyWallClock(std::chrono::system_clock::now(), [] { return std::chrono::steady_clock::now(); }) {}
  // For tests: the clock reads `wall_anchor` when `steady_now` reads what it reads now.
  SteadyWallClock(TimePoint wall_anchor, SteadyNow steady_now)
      : wall_anchor_(wall_anchor), steady_anchor_(steady_now()), steady_now_(std::move(steady_now)) {}

  TimePoint Now() const override {
    return wall_anchor_ + std::chrono::duration_cast<Duration>(steady_now_() - steady_anchor_);
  }

 private:
  // Constant after construction.
  const TimePoint wall_anchor_;
  const std::chrono::steady_clock::time_point steady_anchor_;
  const SteadyNow steady_now_;
};

}  // namespace hcprp
