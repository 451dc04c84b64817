// A Store that forwards every call to another Store, the base of decorators (as leveldb's EnvWrapper
// is for Env). Every call passes through one hook, Intercept, which by default just forwards: a
// decorator that watches or alters calls in general (counts, times, fails, delays them) overrides
// Intercept alone; one that changes a particular call overrides that member and calls the base to
// forward. The target is not owned and must outlive the wrapper. Thread-safe when the target is
// and the subclass's Intercept is.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "store/store.h"

namespace hcprp::store {

// The members of Store, in their order, as decorators name them.
enum class StoreMethod {
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
};
inline constexpr size_t kStoreMethodCount = 15;
// "Read", "Create", ... (the member names) and back.
std::string_view StoreMethodName(StoreMethod m);
std::optional<StoreMethod> ParseStoreMethod(std::string_view name);
// The members that may commit something (document writes, leases, purges).
bool MayCommit(StoreMethod m);
// The members that write documents (Create, Replace, Upsert, Delete, Patch, Batch).
bool WritesDocuments(StoreMethod m);

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* target) : target_(target) {}

  Store* target() const { return target_; }

  Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) override;
  Result<Document> ReadText(std::string_view container, std::string_view pk, std::string_view id) override;
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

 protected:
  // Makes the intercepted call on the target; returns its outcome (its error, or OK).
  class Forward {
   public:
    virtual Status operator()() const = 0;

   protected:
    ~Forward() = default;
  };
  // Runs around every call of `method`. Either calls `forward` once and returns what it returned
  // (or an error of its own, which the caller then gets instead of the target's answer), or returns
  // an error without calling it. The default forwards.
  virtual Status Intercept(StoreMethod method, const Forward& forward);

 private:
  template <typename T, typename F>
  Result<T> Through(StoreMethod method, F&& call);

  Store* const target_;
};

}  // namespace hcprp::store
