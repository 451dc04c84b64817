// A Store decorator that counts every call by operation and outcome and times it, for the
// process's Prometheus registry:
//   hcprp_store_calls_total{engine,operation,outcome}   outcome: ok, not_found, conflict
//                                                       (precondition failed, exists, lease held),
//                                                       unavailable, error
//   hcprp_store_call_duration_seconds{engine,operation}  (WaitForChanges, a long poll, is not timed)
// The target is not owned and must outlive the wrapper; the registry too. Thread-safe.
#pragma once

#include <array>
#include <string>

#include "metrics/registry.h"
#include "store/forwarding_store.h"

namespace hcprp::store {

class MetricsStore final : public ForwardingStore {
 public:
  // `engine`: "sqlite" or "postgresql" (EngineOfUrl).
  MetricsStore(Store* target, metrics::Registry* registry, std::string engine);

  enum Outcome { kOk, kNotFound, kConflict, kUnavailable, kError, kOutcomeCount };

 protected:
  Status Intercept(StoreMethod method, const Forward& forward) override;

 private:
  // Constant after construction.
  std::array<std::array<metrics::Counter*, kOutcomeCount>, kStoreMethodCount> calls_{};
  std::array<metrics::Histogram*, kStoreMethodCount> latency_{};
};

// "sqlite", "postgresql" or "other" for a store URL.
std::string EngineOfUrl(std::string_view url);

}  // namespace hcprp::store
