#include "store/metrics_store.h"

#include <chrono>

namespace hcprp::store {

namespace {

constexpr std::array<const char*, MetricsStore::kOpCount> kOpNames = {
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

template <class R>
MetricsStore::Outcome OutcomeOfResult(const R& r) {
  return r.ok() ? MetricsStore::kOk : OutcomeOf(r.error());
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
  for (size_t op = 0; op < kOpCount; ++op) {
    for (size_t o = 0; o < kOutcomeCount; ++o)
      calls_[op][o] = calls.With({engine, kOpNames[op], kOutcomeNames[o]});
    if (op != kWaitForChanges) latency_[op] = latency.With({engine, kOpNames[op]});
  }
}

template <class F>
auto MetricsStore::Timed(Op op, F&& call) {
  const auto start = std::chrono::steady_clock::now();
  auto r = call();
  if (latency_[op] != nullptr) {
    latency_[op]->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  calls_[op][OutcomeOfResult(r)]->Inc();
  return r;
}

Result<Document> MetricsStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  return Timed(kRead, [&] { return ForwardingStore::Read(container, pk, id); });
}
Result<Document> MetricsStore::Create(std::string_view container, std::string_view pk, std::string_view id,
                                      json::value body, std::optional<int64_t> ttl_seconds) {
  return Timed(kCreate,
               [&] { return ForwardingStore::Create(container, pk, id, std::move(body), ttl_seconds); });
}
Result<Document> MetricsStore::Replace(std::string_view container, std::string_view pk, std::string_view id,
                                       json::value body, std::optional<std::string> if_match,
                                       std::optional<int64_t> ttl_seconds) {
  return Timed(kReplace, [&] {
    return ForwardingStore::Replace(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}
Result<Document> MetricsStore::Upsert(std::string_view container, std::string_view pk, std::string_view id,
                                      json::value body, std::optional<std::string> if_match,
                                      std::optional<int64_t> ttl_seconds) {
  return Timed(kUpsert, [&] {
    return ForwardingStore::Upsert(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}
Status MetricsStore::Delete(std::string_view container, std::string_view pk, std::string_view id,
                            std::optional<std::string> if_match) {
  return Timed(kDelete, [&] { return ForwardingStore::Delete(container, pk, id, std::move(if_match)); });
}
Result<Document> MetricsStore::Patch(std::string_view container, std::string_view pk, std::string_view id,
                                     std::vector<PatchOp> ops, std::vector<Condition> conditions,
                                     std::optional<std::string> if_match) {
  return Timed(kPatch, [&] {
    return ForwardingStore::Patch(container, pk, id, std::move(ops), std::move(conditions),
                                  std::move(if_match));
  });
}
Result<BatchResult> MetricsStore::Batch(std::string_view container, std::string_view pk,
                                        std::vector<WriteOp> ops, const Lease* fence) {
  return Timed(kBatch, [&] { return ForwardingStore::Batch(container, pk, std::move(ops), fence); });
}
Result<QueryPage> MetricsStore::Query(const QueryOptions& options) {
  return Timed(kQuery, [&] { return ForwardingStore::Query(options); });
}
Result<QueryPage> MetricsStore::ListPartitions(std::string_view container, size_t max_items,
                                               std::string_view continuation) {
  return Timed(kListPartitions,
               [&] { return ForwardingStore::ListPartitions(container, max_items, continuation); });
}
Result<ChangePage> MetricsStore::ReadChanges(std::string_view container, std::string_view continuation,
                                             size_t max_changes) {
  return Timed(kReadChanges,
               [&] { return ForwardingStore::ReadChanges(container, continuation, max_changes); });
}
Result<bool> MetricsStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                          std::chrono::milliseconds timeout) {
  return Timed(kWaitForChanges,
               [&] { return ForwardingStore::WaitForChanges(container, continuation, timeout); });
}
Result<Lease> MetricsStore::AcquireLease(std::string_view container, std::string_view pk,
                                         std::string_view name, std::string_view owner,
                                         std::chrono::milliseconds ttl) {
  return Timed(kAcquireLease, [&] { return ForwardingStore::AcquireLease(container, pk, name, owner, ttl); });
}
Result<Lease> MetricsStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  return Timed(kRenewLease, [&] { return ForwardingStore::RenewLease(lease, ttl); });
}
Status MetricsStore::ReleaseLease(const Lease& lease) {
  return Timed(kReleaseLease, [&] { return ForwardingStore::ReleaseLease(lease); });
}
Result<size_t> MetricsStore::PurgeExpired() {
  return Timed(kPurgeExpired, [&] { return ForwardingStore::PurgeExpired(); });
}

}  // namespace hcprp::store
