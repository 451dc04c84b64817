#include "http/worker_pool.h"

#include <algorithm>

namespace hcprp::http::internal {

WorkerPool::WorkerPool(int min_threads, int max_threads, std::chrono::milliseconds linger)
    : min_threads_(std::max(1, min_threads)),
      max_threads_(std::max(std::max(1, min_threads), max_threads)),
      linger_(linger) {
  MutexLock lock(mu_);
  for (int i = 0; i < min_threads_; ++i) {
    ++threads_;
    all_.emplace_back([this] { Loop(true); });
  }
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::Submit(std::function<void()> task) {
  std::vector<std::thread> to_join;
  {
    MutexLock lock(mu_);
    if (shutdown_) return false;
    queue_.push_back(std::move(task));
    if (idle_ < static_cast<int>(queue_.size()) && threads_ < max_threads_) {
      ++threads_;
      all_.emplace_back([this] { Loop(false); });
    }
    // Reap threads that exited on their own, so their handles do not pile up.
    if (!finished_.empty()) {
      to_join.swap(finished_);
    }
  }
  cv_.NotifyOne();
  for (auto& t : to_join) t.join();
  return true;
}

void WorkerPool::Loop(bool core) {
  MutexLock lock(mu_);
  for (;;) {
    if (!queue_.empty()) {
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
      continue;
    }
    if (shutdown_) break;
    ++idle_;
    bool woke;
    if (core) {
      cv_.Wait(lock);
      woke = true;
    } else {
      woke = cv_.WaitFor(lock, linger_) == std::cv_status::no_timeout;
    }
    --idle_;
    if (!woke && queue_.empty() && !shutdown_) {
      // An extra thread idle for `linger_`: leave, handing our handle to the reaper.
      auto self = std::this_thread::get_id();
      auto it =
          std::find_if(all_.begin(), all_.end(), [&](const std::thread& t) { return t.get_id() == self; });
      if (it != all_.end()) {
        finished_.push_back(std::move(*it));
        all_.erase(it);
      }
      --threads_;
      return;
    }
  }
  --threads_;
}

void WorkerPool::Shutdown() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    if (shutdown_ && all_.empty() && finished_.empty()) return;
    shutdown_ = true;
    threads.swap(all_);
    for (auto& t : finished_) threads.push_back(std::move(t));
    finished_.clear();
  }
  cv_.NotifyAll();
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace hcprp::http::internal
