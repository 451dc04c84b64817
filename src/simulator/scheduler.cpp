#include "simulator/scheduler.h"

namespace hcprp::simulator {

Scheduler::Scheduler(const Clock* clock) : clock_(clock) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Schedule(const std::string& key, TimePoint due, std::function<void()> fn) {
  {
    MutexLock lock(mu_);
    uint64_t gen = next_generation_++;
    tasks_[key] = Task{due, gen, std::move(fn)};
    queue_.emplace(due, gen, key);
  }
  cv_.NotifyAll();
}

void Scheduler::Cancel(const std::string& key) {
  MutexLock lock(mu_);
  tasks_.erase(key);
}

size_t Scheduler::pending() const {
  MutexLock lock(mu_);
  return tasks_.size();
}

void Scheduler::Wake() { cv_.NotifyAll(); }

std::optional<TimePoint> Scheduler::NextDueLocked() {
  while (!queue_.empty()) {
    const auto& [due, gen, key] = queue_.top();
    auto it = tasks_.find(key);
    if (it == tasks_.end() || it->second.generation != gen) {
      queue_.pop();  // replaced or cancelled
      continue;
    }
    return due;
  }
  return std::nullopt;
}

std::optional<std::function<void()>> Scheduler::PopDueLocked() {
  auto due = NextDueLocked();
  if (!due || *due > clock_->Now()) return std::nullopt;
  std::string key = std::get<2>(queue_.top());
  queue_.pop();
  auto it = tasks_.find(key);
  auto fn = std::move(it->second.fn);
  tasks_.erase(it);
  return fn;
}

size_t Scheduler::RunDue() {
  size_t ran = 0;
  for (;;) {
    std::optional<std::function<void()>> fn;
    {
      MutexLock lock(mu_);
      // A task the background thread already took must finish first: it may schedule the next one.
      idle_cv_.Wait(lock, [this]() HCPRP_REQUIRES(mu_) { return running_ == 0; });
      fn = PopDueLocked();
    }
    if (!fn) return ran;
    (*fn)();
    ++ran;
  }
}

void Scheduler::Loop() {
  MutexLock lock(mu_);
  while (!stop_) {
    if (auto fn = PopDueLocked()) {
      ++running_;
      lock.unlock();
      (*fn)();
      lock.lock();
      if (--running_ == 0) idle_cv_.NotifyAll();
      continue;
    }
    auto due = NextDueLocked();
    if (!due) {
      cv_.Wait(lock);
    } else {
      // The clock is wall time; wait for the remaining interval on the steady clock.
      auto remaining = *due - clock_->Now();
      cv_.WaitFor(lock, remaining);
    }
  }
}

}  // namespace hcprp::simulator
