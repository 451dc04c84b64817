// A Store that forwards every call to another Store and injects faults on demand, the way leveldb's
// FaultInjectionTestEnv wraps an Env: fail or delay the Nth call (of one method or of any), or run a
// crash hook at a crash point ("before commit" / "after commit") of a call. Crash and fault tests of
// the frontend and backend reach every step of a flow with it.
//
// Rules are counted from when they are added: nth = 1 is the very next matching call. A rule fires
// once and is then gone, except FailAllCalls. Several rules may fire on one call: delays add up,
// then the first failure wins, then crash points run.
//
// Crash points: at kBeforeCommit the hook runs and the call is NOT forwarded (nothing committed); at
// kAfterCommit the call is forwarded and, if it succeeded, the hook runs (the write is committed).
// A hook may end the process (abort(), _exit()) for multi-process crash tests, or block, or return:
// when it returns, the call fails with kUnavailable "injected crash ..." as if the caller had died
// before seeing the result. If the forwarded call fails, the after-commit hook does not run.
//
// Thread-safe. The inner store must outlive the wrapper when it is not owned.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "store/forwarding_store.h"

namespace hcprp::store {

class FaultInjectingStore final : public ForwardingStore {
 public:
  using Method = StoreMethod;  // names: StoreMethodName; writes: MayCommit
  static constexpr size_t kMethodCount = kStoreMethodCount;
  enum class CrashPoint { kBeforeCommit, kAfterCommit };
  using CrashHook = std::function<void(Method method, CrashPoint point)>;

  explicit FaultInjectingStore(Store& inner) : ForwardingStore(&inner) {}
  explicit FaultInjectingStore(std::unique_ptr<Store> inner)
      : ForwardingStore(inner.get()), owned_(std::move(inner)) {}

  // The nth next call of `method` (nullopt: of any method) fails with `error`, not forwarded.
  void FailNthCall(uint64_t nth, Error error, std::optional<Method> method = std::nullopt);
  // Every call of `method` (nullopt: any) fails with `error` until ClearFaults().
  void FailAllCalls(Error error, std::optional<Method> method = std::nullopt);
  // The nth next call of `method` (nullopt: any) sleeps `delay` (real time) before it is forwarded.
  void DelayNthCall(uint64_t nth, std::chrono::milliseconds delay,
                    std::optional<Method> method = std::nullopt);
  // Runs `hook` at `point` of the nth next call of `method` (nullopt: any method that MayCommit).
  void SetCrashPoint(CrashPoint point, CrashHook hook, uint64_t nth = 1,
                     std::optional<Method> method = std::nullopt);
  // Removes every rule (counters stay).
  void ClearFaults();

  // Calls made through the wrapper so far (faulted ones included), of `method` or of all.
  uint64_t CallCount(std::optional<Method> method = std::nullopt) const;

  Store& inner() { return *target(); }

 protected:
  Status Intercept(StoreMethod method, const Forward& forward) override;

 private:
  struct Rule {
    enum class Action { kFail, kFailAll, kDelay, kCrash } action;
    std::optional<Method> method;
    bool writes_only = false;
    uint64_t remaining = 1;  // matching calls until it fires
    std::optional<Error> error;
    std::chrono::milliseconds delay{0};
    CrashPoint point = CrashPoint::kBeforeCommit;
    CrashHook hook;
  };
  // What to do with one call, decided under mu_.
  struct Plan {
    std::chrono::milliseconds delay{0};
    std::optional<Error> error;
    std::vector<std::pair<CrashPoint, CrashHook>> crashes;
  };
  Plan Decide(Method m);

  std::unique_ptr<Store> owned_;  // the target, when owned

  mutable Mutex mu_;
  std::vector<Rule> rules_ HCPRP_GUARDED_BY(mu_);
  uint64_t calls_[kMethodCount] HCPRP_GUARDED_BY(mu_) = {};
};

}  // namespace hcprp::store
