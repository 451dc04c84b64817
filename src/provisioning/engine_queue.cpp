// The work queue: timers, the dispatcher that moves due work to the ready queue, the workers that run
// it (each step committed before its transitions are applied), and the test driver.
#include <algorithm>

#include "provisioning/crash_point.h"
#include "provisioning/engine_internal.h"

namespace hcprp::provisioning {

namespace {

// Crash points of the step this thread runs, reached once the step is committed.
thread_local std::vector<std::string> t_committed_points;

}  // namespace

void AfterCommit(std::string name) {
  if (CrashPointsArmed()) t_committed_points.push_back(std::move(name));
}

std::vector<std::string> TakeStepPoints() {
  std::vector<std::string> points;
  points.swap(t_committed_points);
  return points;
}

void Engine::EndStep(bool must_commit) {
  for (auto& p : TakeStepPoints()) committed_points_.push_back(std::move(p));
  if (options_.state) EncodeTouchedUnitsLocked();
  if (must_commit || !started_ || !options_.state) {
    (void)CommitNow();
    return;
  }
  dirty_cv_.NotifyOne();
}

void Engine::CommitLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    const size_t dirty = dirty_units_.size() + dirty_objs_.size();
    if (dirty == 0 && committed_points_.empty() && awaiting_commit_.empty()) {
      dirty_cv_.Wait(lock);
      continue;
    }
    // The group's first step starts the interval: a step alone waits at most that long. A step whose
    // transitions wait for the commit does not wait for the group.
    if (group_started_ == std::chrono::steady_clock::time_point{})
      group_started_ = std::chrono::steady_clock::now();
    const auto due = group_started_ + kGroupCommitInterval;
    if (awaiting_commit_.empty() && dirty < kGroupCommitSize && std::chrono::steady_clock::now() < due) {
      dirty_cv_.WaitUntil(lock, due);
      continue;
    }
    // Every step waiting here was taken into the dirty sets before: the commit below holds it.
    std::vector<Deferred> committed;
    committed.swap(awaiting_commit_);
    (void)CommitNow();  // releases mu_ while writing
    if (committed.empty()) continue;
    for (auto& d : committed) applies_.push_back(std::move(d));
    ready_cv_.NotifyAll();
  }
}

void Engine::FinishKeyLocked(const std::string& key) {
  running_.erase(key);
  if (rerun_.erase(key)) EnqueueLocked(key, options_.clock->Now());
}

void Engine::Start() {
  if (started_.exchange(true)) return;
  for (int i = 0; i < options_.concurrency; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  if (options_.state) {
    {
      MutexLock lock(mu_);
      committer_running_ = true;
    }
    committer_ = std::thread([this] { CommitLoop(); });
  }
}

void Engine::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
  }
  timer_cv_.NotifyAll();
  ready_cv_.NotifyAll();
  dirty_cv_.NotifyAll();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (dispatcher_.joinable()) dispatcher_.join();
  if (committer_.joinable()) committer_.join();
  {
    MutexLock lock(mu_);
    committer_running_ = false;
  }
  {
    // Due work not taken yet goes back to the timers (RunDueForTest, a later Start()).
    MutexLock lock(mu_);
    const TimePoint now = options_.clock->Now();
    std::deque<std::string> left;
    left.swap(ready_);
    in_ready_.clear();
    for (const auto& key : left) EnqueueLocked(key, now);
  }
  (void)Flush();
  {
    // The transitions of steps committed by the Flush above, told now.
    MutexLock lock(mu_);
    std::vector<Deferred> left;
    for (auto& d : awaiting_commit_) left.push_back(std::move(d));
    for (auto& d : applies_) left.push_back(std::move(d));
    awaiting_commit_.clear();
    applies_.clear();
    for (auto& d : left) {
      mu_.unlock();
      Apply(d.out);
      mu_.lock();
      FinishKeyLocked(d.key);
    }
  }
  {
    MutexLock lock(mu_);
    stopping_ = false;  // RunDueForTest stays usable
    dispatcher_wakes_ = TimePoint::max();
  }
  started_ = false;
}

void Engine::EnqueueLocked(const std::string& key, TimePoint at) {
  auto it = queued_.find(key);
  if (it != queued_.end() && it->second <= at) return;
  queued_[key] = at;
  timers_.emplace(at, key);
  if (at + kTimerSlack < dispatcher_wakes_) {
    dispatcher_wakes_ = at;
    timer_cv_.NotifyOne();
  }
}

void Engine::DispatchLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    dispatcher_wakes_ = TimePoint::min();  // running: nobody needs to wake it
    const TimePoint now = options_.clock->Now();
    size_t moved = 0;
    while (!timers_.empty() && timers_.begin()->first <= now) {
      auto node = timers_.extract(timers_.begin());
      const std::string& key = node.mapped();
      auto q = queued_.find(key);
      if (q == queued_.end() || q->second != node.key()) continue;  // superseded by an earlier queueing
      queued_.erase(q);
      if (!in_ready_.insert(key).second) continue;
      ready_.push_back(std::move(node.mapped()));
      ++moved;
    }
    if (moved >= workers_.size()) {
      ready_cv_.NotifyAll();
    } else {
      for (size_t i = 0; i < moved; ++i) ready_cv_.NotifyOne();
    }
    // Never sleep long: a FakeClock moves without notifying anyone. Timers due within the slack of the
    // first one go together: one wake-up per batch, not per timer.
    TimePoint wake = now + std::chrono::milliseconds(50);
    if (!timers_.empty()) wake = std::min(wake, timers_.begin()->first + kTimerSlack);
    dispatcher_wakes_ = wake;
    timer_cv_.WaitFor(lock, wake - now);
  }
}

void Engine::WorkerLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    if (!applies_.empty()) {
      Deferred d = std::move(applies_.front());
      applies_.pop_front();
      mu_.unlock();
      Apply(d.out);
      mu_.lock();
      FinishKeyLocked(d.key);
      continue;
    }
    if (ready_.empty()) {
      ready_cv_.Wait(lock);
      continue;
    }
    std::string key = std::move(ready_.front());
    ready_.pop_front();
    in_ready_.erase(key);
    RunKey(key);
  }
}

void Engine::RunKey(const std::string& key) {
  if (running_.count(key)) {
    rerun_.insert(key);
    return;
  }
  running_.insert(key);
  if (key.rfind("u:", 0) == 0) {
    mu_.unlock();
    ReconcileUnit(key.substr(2));
    mu_.lock();
    // A unit step tells the Cluster Service nothing: it is committed with the steps around it.
    EndStep(false);
  } else if (key.rfind("g:", 0) == 0) {
    std::vector<Pending> out{Pending{key.substr(2), std::string(simulator::kGone), "", "", false, {}, ""}};
    mu_.unlock();
    Apply(out);
    mu_.lock();
  } else {
    std::vector<Pending> out;
    ReconcileHrefLocked(key.substr(2), out);
    // Written before the Cluster Service hears of a transition: after a crash in between it announces
    // the object again and the engine, which already has the step, repeats only the transition.
    const bool moves = std::any_of(out.begin(), out.end(),
                                   [](const Pending& p) { return !p.conditions && p.enqueue.empty(); });
    if (moves && committer_running_) {
      // The committer writes the step at once and hands its transitions back to a worker (the key
      // stays running until then): no worker waits for the disk.
      EndStep(false);
      awaiting_commit_.push_back(Deferred{key, std::move(out)});
      dirty_cv_.NotifyOne();
      return;
    }
    EndStep(moves);
    mu_.unlock();
    Apply(out);
    mu_.lock();
  }
  FinishKeyLocked(key);
}

void Engine::ReconcileHrefLocked(const std::string& href, std::vector<Pending>& out) {
  auto it = objs_.find(href);
  if (it == objs_.end()) return;
  TouchObjectLocked(href);
  ReconcileObjectLocked(it->second, out);
  TouchObjectLocked(href);
}

size_t Engine::RunDueForTest(int max_rounds) {
  size_t ran = 0;
  for (int round = 0; round < max_rounds; ++round) {
    std::vector<std::string> due;
    {
      MutexLock lock(mu_);
      const TimePoint now = options_.clock->Now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        auto [at, key] = *timers_.begin();
        timers_.erase(timers_.begin());
        auto q = queued_.find(key);
        if (q == queued_.end() || q->second != at) continue;
        queued_.erase(q);
        due.push_back(key);
      }
    }
    if (due.empty()) break;
    for (const auto& key : due) {
      ++ran;
      if (key.rfind("u:", 0) == 0) {
        ReconcileUnit(key.substr(2));
        MutexLock lock(mu_);
        EndStep(true);
        continue;
      }
      if (key.rfind("g:", 0) == 0) {
        std::vector<Pending> removal{
            Pending{key.substr(2), std::string(simulator::kGone), "", "", false, {}, ""}};
        Apply(removal);
        continue;
      }
      std::vector<Pending> out;
      {
        MutexLock lock(mu_);
        ReconcileHrefLocked(key.substr(2), out);
        EndStep(true);
      }
      Apply(out);
    }
  }
  return ran;
}

std::optional<TimePoint> Engine::NextDueForTest() const {
  MutexLock lock(mu_);
  std::optional<TimePoint> best;
  for (const auto& [k, t] : queued_) {
    if (!best || t < *best) best = t;
  }
  return best;
}

}  // namespace hcprp::provisioning
