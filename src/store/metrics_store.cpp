#include "store/metrics_store.h"

#include <chrono>

namespace hcprp::store {

namespace {

constexpr std::array<const char*, kStoreMethodCount> kOpNames = {
    "read",        "create",        "replace",         "upsert",       "delete",           "patch",
    "batch",       "query",         "list_partitions", "read_changes", "wait_for_changes", "acquire_lease",
    "renew_lease", "release_lease", "purge_expired"};
constexpr std::array<const char*, MetricsStore::kOutcomeCount> kOutcomeNames = {"ok", "not_found", "conflict",
                                                                                "unavailable", "error"};

MetricsStore::Outcome OutcomeOf(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return MetricsStore::kNotFound;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kPreconditionFailed:
    case ErrorCode::kConflict:
      return MetricsStore::kConflict;
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:
      return MetricsStore::kUnavailable;
    default:
      return MetricsStore::kError;
  }
}

}  // namespace

std::string EngineOfUrl(std::string_view url) {
  if (url.starts_with("sqlite:")) return "sqlite";
  if (url.starts_with("postgresql:") || url.starts_with("postgres:")) return "postgresql";
  return "other";
}

MetricsStore::MetricsStore(Store* target, metrics::Registry* registry, std::string engine)
    : ForwardingStore(target) {
  auto& calls =
      registry->AddCounter("hcprp_store_calls_total", "Store calls by engine, operation and outcome",
                           {"engine", "operation", "outcome"});
  auto& latency = registry->AddHistogram("hcprp_store_call_duration_seconds",
                                         "Store call latency by engine and operation",
                                         {"engine", "operation"}, metrics::LatencyBuckets());
  for (size_t op = 0; op < kStoreMethodCount; ++op) {
    for (size_t o = 0; o < kOutcomeCount; ++o)
      calls_[op][o] = calls.With({engine, kOpNames[op], kOutcomeNames[o]});
    if (static_cast<StoreMethod>(op) != StoreMethod::kWaitForChanges)
      latency_[op] = latency.With({engine, kOpNames[op]});
  }
}

Status MetricsStore::Intercept(StoreMethod method, const Forward& forward) {
  const auto op = static_cast<size_t>(method);
  const auto start = std::chrono::steady_clock::now();
  Status outcome = forward();
  if (latency_[op] != nullptr) {
    latency_[op]->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  calls_[op][outcome.ok() ? kOk : OutcomeOf(outcome.error())]->Inc();
  return outcome;
}

}  // namespace hcprp::store
