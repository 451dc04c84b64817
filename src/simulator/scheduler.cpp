#include "simulator/scheduler.h"

namespace hcprp::simulator {

Scheduler::Scheduler(const Clock* clock) : clock_(clock) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Schedule(const std::string& key, TimePoint due, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    uint64_t gen = next_generation_++;
    tasks_[key] = Task{due, gen, std::move(fn)};
    queue_.emplace(due, gen, key);
  }
  cv_.notify_all();
}

void Scheduler::Cancel(const std::string& key) {
  std::lock_guard lock(mu_);
  tasks_.erase(key);
}

size_t Scheduler::pending() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

void Scheduler::Wake() { cv_.notify_all(); }

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
      std::unique_lock lock(mu_);
      // A task the background thread already took must finish first: it may schedule the next one.
      idle_cv_.wait(lock, [this] { return running_ == 0; });
      fn = PopDueLocked();
    }
    if (!fn) return ran;
    (*fn)();
    ++ran;
  }
}

void Scheduler::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (auto fn = PopDueLocked()) {
      ++running_;
      lock.unlock();
      (*fn)();
      lock.lock();
      if (--running_ == 0) idle_cv_.notify_all();
      continue;
    }
    auto due = NextDueLocked();
    if (!due) {
      cv_.wait(lock);
    } else {
      // The clock is wall time; wait for the remaining interval on the steady clock.
      auto remaining = *due - clock_->Now();
      cv_.wait_for(lock, remaining);
    }
  }
}

}  // namespace hcprp::simulator
