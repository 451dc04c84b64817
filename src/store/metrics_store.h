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

  Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) override;
  Result<Document> Create(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<int64_t> ttl_seconds = std::nullopt) override;
  Result<Document> Replace(std::string_view container, std::string_view pk, std::string_view id,
                           json::value body, std::optional<std::string> if_match = std::nullopt,
                           std::optional<int64_t> ttl_seconds = std::nullopt) override;
  Result<Document> Upsert(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<std::string> if_match = std::nullopt,
                          std::optional<int64_t> ttl_seconds = std::nullopt) override;
  Status Delete(std::string_view container, std::string_view pk, std::string_view id,
                std::optional<std::string> if_match = std::nullopt) override;
  Result<Document> Patch(std::string_view container, std::string_view pk, std::string_view id,
                         std::vector<PatchOp> ops, std::vector<Condition> conditions = {},
                         std::optional<std::string> if_match = std::nullopt) override;
  Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                            const Lease* fence = nullptr) override;
  Result<QueryPage> Query(const QueryOptions& options) override;
  Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                   std::string_view continuation) override;
  Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                 size_t max_changes) override;
  Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                              std::chrono::milliseconds timeout) override;
  Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                             std::string_view owner, std::chrono::milliseconds ttl) override;
  Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) override;
  Status ReleaseLease(const Lease& lease) override;
  Result<size_t> PurgeExpired() override;

  enum Op {
    kRead,
    kCreate,
    kReplace,
    kUpsert,
    kDelete,
    kPatch,
    kBatch,
    kQuery,
    kListPartitions,
    kReadChanges,
    kWaitForChanges,
    kAcquireLease,
    kRenewLease,
    kReleaseLease,
    kPurgeExpired,
    kOpCount
  };
  enum Outcome { kOk, kNotFound, kConflict, kUnavailable, kError, kOutcomeCount };

 private:
  template <class F>
  auto Timed(Op op, F&& call);

  std::array<std::array<metrics::Counter*, kOutcomeCount>, kOpCount> calls_{};
  std::array<metrics::Histogram*, kOpCount> latency_{};
};

// "sqlite", "postgresql" or "other" for a store URL.
std::string EngineOfUrl(std::string_view url);

}  // namespace hcprp::store
