#include "store/fault_injecting_store.h"

#include <thread>

namespace hcprp::store {

void FaultInjectingStore::FailNthCall(uint64_t nth, Error error, std::optional<Method> method) {
  MutexLock lk(mu_);
  Rule r{.action = Rule::Action::kFail, .method = method};
  r.remaining = nth == 0 ? 1 : nth;
  r.error = std::move(error);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::FailAllCalls(Error error, std::optional<Method> method) {
  MutexLock lk(mu_);
  Rule r{.action = Rule::Action::kFailAll, .method = method};
  r.error = std::move(error);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::DelayNthCall(uint64_t nth, std::chrono::milliseconds delay,
                                       std::optional<Method> method) {
  MutexLock lk(mu_);
  Rule r{.action = Rule::Action::kDelay, .method = method};
  r.remaining = nth == 0 ? 1 : nth;
  r.delay = delay;
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::SetCrashPoint(CrashPoint point, CrashHook hook, uint64_t nth,
                                        std::optional<Method> method) {
  MutexLock lk(mu_);
  Rule r{.action = Rule::Action::kCrash, .method = method};
  r.writes_only = !method.has_value();
  r.remaining = nth == 0 ? 1 : nth;
  r.point = point;
  r.hook = std::move(hook);
  rules_.push_back(std::move(r));
}

void FaultInjectingStore::ClearFaults() {
  MutexLock lk(mu_);
  rules_.clear();
}

uint64_t FaultInjectingStore::CallCount(std::optional<Method> method) const {
  MutexLock lk(mu_);
  if (method) return calls_[static_cast<size_t>(*method)];
  uint64_t total = 0;
  for (uint64_t c : calls_) total += c;
  return total;
}

FaultInjectingStore::Plan FaultInjectingStore::Decide(Method m) {
  MutexLock lk(mu_);
  ++calls_[static_cast<size_t>(m)];
  Plan plan;
  for (auto it = rules_.begin(); it != rules_.end();) {
    bool matches = it->method ? *it->method == m : (!it->writes_only || MayCommit(m));
    if (!matches) {
      ++it;
      continue;
    }
    if (it->action == Rule::Action::kFailAll) {
      if (!plan.error) plan.error = it->error;
      ++it;
      continue;
    }
    if (--it->remaining > 0) {
      ++it;
      continue;
    }
    switch (it->action) {
      case Rule::Action::kFail:
        if (!plan.error) plan.error = std::move(it->error);
        break;
      case Rule::Action::kDelay:
        plan.delay += it->delay;
        break;
      case Rule::Action::kCrash:
        plan.crashes.emplace_back(it->point, std::move(it->hook));
        break;
      case Rule::Action::kFailAll:
        break;
    }
    it = rules_.erase(it);
  }
  return plan;
}

Status FaultInjectingStore::Intercept(StoreMethod m, const Forward& forward) {
  Plan plan = Decide(m);
  if (plan.delay.count() > 0) std::this_thread::sleep_for(plan.delay);
  if (plan.error) return *plan.error;
  auto crash_error = [&](CrashPoint p) {
    return Error::Unavailable(std::string("injected crash ") +
                              (p == CrashPoint::kBeforeCommit ? "before" : "after") + " commit of " +
                              std::string(StoreMethodName(m)));
  };
  for (auto& [point, hook] : plan.crashes) {
    if (point == CrashPoint::kBeforeCommit) {
      if (hook) hook(m, point);
      return crash_error(point);
    }
  }
  Status result = forward();
  if (!result.ok()) return result;
  for (auto& [point, hook] : plan.crashes) {
    if (point == CrashPoint::kAfterCommit) {
      if (hook) hook(m, point);
      return crash_error(point);
    }
  }
  return result;
}

}  // namespace hcprp::store
