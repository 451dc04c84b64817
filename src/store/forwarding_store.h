// A Store that forwards every call to another Store, the base of decorators that change a few calls
// (as leveldb's EnvWrapper is for Env): a subclass overrides what it watches or alters and inherits
// the rest. The target is not owned and must outlive the wrapper. Thread-safe when the target is.
#pragma once

#include "store/store.h"

namespace hcprp::store {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* target) : target_(target) {}

  Store* target() const { return target_; }

  Result<Document> Read(std::string_view container, std::string_view pk, std::string_view id) override {
    return target_->Read(container, pk, id);
  }
  Result<Document> Create(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<int64_t> ttl_seconds = std::nullopt) override {
    return target_->Create(container, pk, id, std::move(body), ttl_seconds);
  }
  Result<Document> Replace(std::string_view container, std::string_view pk, std::string_view id,
                           json::value body, std::optional<std::string> if_match = std::nullopt,
                           std::optional<int64_t> ttl_seconds = std::nullopt) override {
    return target_->Replace(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  }
  Result<Document> Upsert(std::string_view container, std::string_view pk, std::string_view id,
                          json::value body, std::optional<std::string> if_match = std::nullopt,
                          std::optional<int64_t> ttl_seconds = std::nullopt) override {
    return target_->Upsert(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  }
  Status Delete(std::string_view container, std::string_view pk, std::string_view id,
                std::optional<std::string> if_match = std::nullopt) override {
    return target_->Delete(container, pk, id, std::move(if_match));
  }
  Result<Document> Patch(std::string_view container, std::string_view pk, std::string_view id,
                         std::vector<PatchOp> ops, std::vector<Condition> conditions = {},
                         std::optional<std::string> if_match = std::nullopt) override {
    return target_->Patch(container, pk, id, std::move(ops), std::move(conditions), std::move(if_match));
  }
  Result<BatchResult> Batch(std::string_view container, std::string_view pk, std::vector<WriteOp> ops,
                            const Lease* fence = nullptr) override {
    return target_->Batch(container, pk, std::move(ops), fence);
  }
  Result<QueryPage> Query(const QueryOptions& options) override { return target_->Query(options); }
  Result<QueryPage> ListPartitions(std::string_view container, size_t max_items,
                                   std::string_view continuation) override {
    return target_->ListPartitions(container, max_items, continuation);
  }
  Result<ChangePage> ReadChanges(std::string_view container, std::string_view continuation,
                                 size_t max_changes) override {
    return target_->ReadChanges(container, continuation, max_changes);
  }
  Result<bool> WaitForChanges(std::string_view container, std::string_view continuation,
                              std::chrono::milliseconds timeout) override {
    return target_->WaitForChanges(container, continuation, timeout);
  }
  Result<Lease> AcquireLease(std::string_view container, std::string_view pk, std::string_view name,
                             std::string_view owner, std::chrono::milliseconds ttl) override {
    return target_->AcquireLease(container, pk, name, owner, ttl);
  }
  Result<Lease> RenewLease(const Lease& lease, std::chrono::milliseconds ttl) override {
    return target_->RenewLease(lease, ttl);
  }
  Status ReleaseLease(const Lease& lease) override { return target_->ReleaseLease(lease); }
  Result<size_t> PurgeExpired() override { return target_->PurgeExpired(); }

 private:
  Store* const target_;
};

}  // namespace hcprp::store
