// Time comes in through this interface so that every deadline, TTL, lease and Retry-After can be
// tested by advancing a fake clock instead of sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hcprp {

using TimePoint = std::chrono::system_clock::time_point;
using Duration = std::chrono::system_clock::duration;

// Thread-safe. Now() is wall-clock time (UTC).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  int64_t NowMillis() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Now().time_since_epoch()).count();
  }
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::system_clock::now(); }
};

// A clock that moves only when a test moves it. Starts at a fixed, recognisable instant
// (2025-01-01T00:00:00Z) unless told otherwise.
class FakeClock final : public Clock {
 public:
  FakeClock();
  explicit FakeClock(TimePoint start) : now_ns_(start.time_since_epoch().count()) {}

  TimePoint Now() const override { return TimePoint(Duration(now_ns_.load())); }
  void Advance(Duration d) { now_ns_.fetch_add(d.count()); }
  void Set(TimePoint t) { now_ns_.store(t.time_since_epoch().count()); }

 private:
  std::atomic<Duration::rep> now_ns_;
};

}  // namespace hcprp
