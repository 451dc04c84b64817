#include "core/task_pool.h"

#include <algorithm>
#include <utility>

namespace hcprp {

TaskPool::TaskPool(int min_threads, int max_threads, std::chrono::milliseconds linger)
    : min_threads_(std::max(1, min_threads)),
      max_threads_(std::max(std::max(1, min_threads), max_threads)),
      linger_(linger) {
  MutexLock lock(mu_);
  for (int i = 0; i < min_threads_; ++i) {
    ++threads_;
    all_.emplace_back([this] { Loop(true); });
  }
}

TaskPool::~TaskPool() { Shutdown(); }

bool TaskPool::Submit(std::function<void()> task) {
  Idle* wake = nullptr;
  std::vector<std::thread> to_join;
  {
    MutexLock lock(mu_);
    if (shutdown_) return false;
    if (!idle_.empty()) {
      wake = idle_.back();
      idle_.pop_back();
      wake->task = std::move(task);
    } else {
      queue_.push_back(std::move(task));
      if (threads_ < max_threads_) {
        ++threads_;
        all_.emplace_back([this] { Loop(false); });
      }
    }
    // Reap threads that exited on their own, so their handles do not pile up.
    to_join.swap(finished_);
  }
  if (wake != nullptr) wake->Claim();
  for (auto& t : to_join) t.join();
  return true;
}

bool TaskPool::NextTask(Idle& self, bool core, std::function<void()>& task) {
  mu_.lock();
  while (true) {
    if (!queue_.empty()) {
      task = std::move(queue_.front());
      queue_.pop_front();
      mu_.unlock();
      return true;
    }
    if (shutdown_) {
      --threads_;
      mu_.unlock();
      return false;
    }
    idle_.push_back(&self);
    mu_.unlock();
    if (!self.Wait(core ? std::nullopt : std::optional(linger_))) {
      mu_.lock();
      if (auto it = std::find(idle_.begin(), idle_.end(), &self); it != idle_.end()) {
        idle_.erase(it);  // idle for `linger_` and unclaimed
        if (queue_.empty() && !shutdown_) {
          LeaveLocked();
          mu_.unlock();
          return false;
        }
        continue;
      }
      mu_.unlock();
      self.Wait(std::nullopt);  // claimed just as the wait ended: the wake-up follows
    }
    // Claimed: Submit() handed over a task, or Shutdown() woke this thread without one.
    if (self.task) {
      task = std::move(self.task);
      self.task = nullptr;
      return true;
    }
    mu_.lock();
  }
}

void TaskPool::LeaveLocked() {
  const auto self = std::this_thread::get_id();
  auto it = std::find_if(all_.begin(), all_.end(), [&](const std::thread& t) { return t.get_id() == self; });
  if (it != all_.end()) {
    finished_.push_back(std::move(*it));
    all_.erase(it);
  }
  --threads_;
}

void TaskPool::Loop(bool core) {
  Idle self;
  std::function<void()> task;
  while (NextTask(self, core, task)) {
    task();
    task = nullptr;
  }
}

int TaskPool::Threads() {
  MutexLock lock(mu_);
  return threads_;
}

void TaskPool::Shutdown() {
  std::vector<std::thread> threads;
  std::vector<Idle*> idle;
  {
    MutexLock lock(mu_);
    if (shutdown_ && all_.empty() && finished_.empty()) return;
    shutdown_ = true;
    threads.swap(all_);
    for (auto& t : finished_) threads.push_back(std::move(t));
    finished_.clear();
    idle.swap(idle_);
  }
  for (Idle* w : idle) w->Claim();  // with no task: they drain the queue and end
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace hcprp
