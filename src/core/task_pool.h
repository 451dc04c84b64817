// A pool of threads that run submitted tasks (the HTTP server's request handlers, a version pass's
// upgrade requests).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace hcprp {

// Runs submitted tasks on `min_threads` threads, adding threads (up to `max_threads`) whenever a
// task arrives and no thread is idle; threads above the minimum exit after idling `linger`.
// Thread-safe.
//
// A task goes straight to the thread that went idle last (its caches are the warmest), which waits
// on a condition of its own and runs the task without taking the pool's lock. (With one condition variable
// and lock shared by every thread, handler threads queued for the lock after each wake-up; on two cores that
// cost about 18 context switches per request.)
class TaskPool {
 public:
  TaskPool(int min_threads, int max_threads, std::chrono::milliseconds linger = std::chrono::seconds(30));
  ~TaskPool();  // Shutdown()

  // False once Shutdown() has begun; the task is then not run.
  bool Submit(std::function<void()> task);
  // Runs every queued task, then joins every thread.
  void Shutdown();
  // Threads running or waiting for a task (for tests and stats).
  int Threads();

 private:
  // An idle thread, woken by Claim(). `task` is written by Submit() before Claim() and read by the
  // thread after Wait() (an empty task: woken by Shutdown()).
  struct Idle {
    Mutex mu;
    CondVar cv;
    bool claimed HCPRP_GUARDED_BY(mu) = false;
    std::function<void()> task;

    void Claim() {
      {
        MutexLock lock(mu);
        claimed = true;
      }
      cv.NotifyOne();
    }
    // True once claimed; false when `linger` (if any) passed first.
    bool Wait(std::optional<std::chrono::milliseconds> linger) {
      MutexLock lock(mu);
      auto is_claimed = [this]() HCPRP_REQUIRES(mu) { return claimed; };
      if (!linger) {
        cv.Wait(lock, is_claimed);
      } else if (!cv.WaitFor(lock, *linger, is_claimed)) {
        return false;
      }
      claimed = false;
      return true;
    }
  };

  void Loop(bool core);
  // Takes a queued task, or waits idle for one; false when the thread ends (counted out).
  bool NextTask(Idle& self, bool core, std::function<void()>& task) HCPRP_EXCLUDES(mu_);
  // Moves the calling extra thread's handle to finished_ for the next Submit() to join.
  void LeaveLocked() HCPRP_REQUIRES(mu_);

  const int min_threads_;
  const int max_threads_;
  const std::chrono::milliseconds linger_;

  Mutex mu_;
  std::deque<std::function<void()>> queue_ HCPRP_GUARDED_BY(mu_);  // tasks no idle thread took
  std::vector<Idle*> idle_ HCPRP_GUARDED_BY(mu_);                  // last idle at the back
  int threads_ HCPRP_GUARDED_BY(mu_) = 0;
  bool shutdown_ HCPRP_GUARDED_BY(mu_) = false;
  std::vector<std::thread> finished_ HCPRP_GUARDED_BY(mu_);  // exited extra threads, joined later
  std::vector<std::thread> all_ HCPRP_GUARDED_BY(mu_);       // every thread not yet joined
};

}  // namespace hcprp
