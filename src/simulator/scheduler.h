// Runs keyed tasks when a Clock reaches their due time, on one timer thread (a priority queue and a
// condition variable; no polling). Private to the simulator.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/clock.h"
#include "core/mutex.h"

namespace hcprp::simulator {

// Thread-safe. Tasks run outside the scheduler's lock, one at a time per thread that runs them.
class Scheduler {
 public:
  explicit Scheduler(const Clock* clock);  // clock: not owned, outlives the scheduler
  ~Scheduler();                            // Stop()

  void Start();  // starts the timer thread
  void Stop();   // joins it; pending tasks stay queued (and never run)

  // Runs `fn` at `due`, replacing the task already scheduled under `key`.
  void Schedule(const std::string& key, TimePoint due, std::function<void()> fn);
  void Cancel(const std::string& key);
  // Runs every task due now, including those that become due while running; returns how many ran.
  // For tests that move a FakeClock (the timer thread waits in real time).
  size_t RunDue();
  // Makes the timer thread look at the clock again (after a FakeClock moved).
  void Wake();
  size_t pending() const;

 private:
  struct Task {
    TimePoint due;
    uint64_t generation;
    std::function<void()> fn;
  };
  using QueueEntry = std::tuple<TimePoint, uint64_t, std::string>;
  // Pops one due task under the lock; nullopt when none is due.
  std::optional<std::function<void()>> PopDueLocked() HCPRP_REQUIRES(mu_);
  std::optional<TimePoint> NextDueLocked() HCPRP_REQUIRES(mu_);
  void Loop();

  const Clock* clock_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, Task> tasks_ HCPRP_GUARDED_BY(mu_);
  // Lazy deletion
  std::priority_queue<QueueEntry, std::vector<QueueEntry>, std::greater<>> queue_ HCPRP_GUARDED_BY(mu_);
  uint64_t next_generation_ HCPRP_GUARDED_BY(mu_) = 1;
  bool stop_ HCPRP_GUARDED_BY(mu_) = false;
  int running_ HCPRP_GUARDED_BY(mu_) = 0;  // tasks the background thread is running right now
  CondVar idle_cv_;                        // signalled when running_ drops to zero
  std::thread thread_;
};

}  // namespace hcprp::simulator
