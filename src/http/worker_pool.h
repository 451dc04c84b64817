// Private to src/http: the pool of threads that run request handlers.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace hcprp::http::internal {

// Runs submitted tasks on `min_threads` threads, adding threads (up to `max_threads`) whenever a
// task arrives and no thread is idle; threads above the minimum exit after idling `linger`.
// Thread-safe.
class WorkerPool {
 public:
  WorkerPool(int min_threads, int max_threads, std::chrono::milliseconds linger = std::chrono::seconds(30));
  ~WorkerPool();  // Shutdown()

  // False once Shutdown() has begun; the task is then not run.
  bool Submit(std::function<void()> task);
  // Runs every queued task, then joins every thread.
  void Shutdown();

 private:
  void Loop(bool core);

  const int min_threads_;
  const int max_threads_;
  const std::chrono::milliseconds linger_;

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ HCPRP_GUARDED_BY(mu_);
  int threads_ HCPRP_GUARDED_BY(mu_) = 0;
  int idle_ HCPRP_GUARDED_BY(mu_) = 0;
  bool shutdown_ HCPRP_GUARDED_BY(mu_) = false;
  std::vector<std::thread> finished_ HCPRP_GUARDED_BY(mu_);  // exited extra threads, joined later
  std::vector<std::thread> all_ HCPRP_GUARDED_BY(mu_);       // every thread not yet joined
};

}  // namespace hcprp::http::internal
