// A fixed set of threads that run the iterations of one loop at a time (ForEach), for work that is
// handed out many times a second (a page of events, a batch of writes): the threads are started once,
// not for every loop. Thread-safe; one ForEach runs at a time (a second caller waits).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace hcprp {

class WorkerPool {
 public:
  // `threads` runs of fn at once: the caller of ForEach and threads - 1 started here (none for 0 or 1).
  explicit WorkerPool(size_t threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls fn(i) for every i < count, on the pool's threads and the caller's, each i once; returns when
  // all calls returned. fn must not throw.
  void ForEach(size_t count, const std::function<void(size_t)>& fn);

  size_t threads() const { return helpers_.size() + 1; }

 private:
  void Help();
  // Runs iterations of the current loop until none is left.
  void Drain(const std::function<void(size_t)>& fn, size_t count);

  Mutex call_mu_;  // one ForEach at a time
  Mutex mu_;
  CondVar wake_;  // a loop was handed out, or the pool stops
  CondVar idle_;  // a helper left the loop
  const std::function<void(size_t)>* fn_ HCPRP_GUARDED_BY(mu_) = nullptr;  // null: no loop to join
  size_t count_ HCPRP_GUARDED_BY(mu_) = 0;
  uint64_t loop_ HCPRP_GUARDED_BY(mu_) = 0;  // the number of loops handed out
  size_t busy_ HCPRP_GUARDED_BY(mu_) = 0;    // helpers inside the current loop
  bool stopping_ HCPRP_GUARDED_BY(mu_) = false;
  std::atomic<size_t> next_{0};  // the next iteration to take
  std::vector<std::thread> helpers_;
};

}  // namespace hcprp
