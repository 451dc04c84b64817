#include "store/forwarding_store.h"

#include <utility>

namespace hcprp::store {
namespace {

constexpr std::string_view kNames[kStoreMethodCount] = {
    "Read",           "Create",       "Replace",    "Upsert",         "Delete",
    "Patch",          "Batch",        "Query",      "ListPartitions", "ReadChanges",
    "WaitForChanges", "AcquireLease", "RenewLease", "ReleaseLease",   "PurgeExpired",
};

}  // namespace

std::string_view StoreMethodName(StoreMethod m) { return kNames[static_cast<size_t>(m)]; }

std::optional<StoreMethod> ParseStoreMethod(std::string_view name) {
  for (size_t i = 0; i < kStoreMethodCount; ++i) {
    if (kNames[i] == name) return static_cast<StoreMethod>(i);
  }
  return std::nullopt;
}

bool WritesDocuments(StoreMethod m) {
  switch (m) {
    case StoreMethod::kCreate:
    case StoreMethod::kReplace:
    case StoreMethod::kUpsert:
    case StoreMethod::kDelete:
    case StoreMethod::kPatch:
    case StoreMethod::kBatch:
      return true;
    default:
      return false;
  }
}

bool MayCommit(StoreMethod m) {
  switch (m) {
    case StoreMethod::kAcquireLease:
    case StoreMethod::kRenewLease:
    case StoreMethod::kReleaseLease:
    case StoreMethod::kPurgeExpired:
      return true;
    default:
      return WritesDocuments(m);
  }
}

Status ForwardingStore::Intercept(StoreMethod, const Forward& forward) { return forward(); }

template <typename T, typename F>
Result<T> ForwardingStore::Through(StoreMethod method, F&& call) {
  std::optional<Result<T>> out;
  struct Call final : Forward {
    Call(F& f, std::optional<Result<T>>& out) : f_(f), out_(out) {}
    Status operator()() const override {
      out_.emplace(f_());
      if (!out_->ok()) return out_->error();
      return Status::Ok();
    }
    F& f_;
    std::optional<Result<T>>& out_;
  };
  HCPRP_RETURN_IF_ERROR(Intercept(method, Call(call, out)));
  if (!out)
    return Error::Internal("a store decorator did not forward " + std::string(StoreMethodName(method)));
  return std::move(*out);
}

Result<Document> ForwardingStore::Read(std::string_view container, std::string_view pk, std::string_view id) {
  return Through<Document>(StoreMethod::kRead, [&] { return target_->Read(container, pk, id); });
}

Result<Document> ForwardingStore::ReadText(std::string_view container, std::string_view pk,
                                           std::string_view id) {
  return Through<Document>(StoreMethod::kRead, [&] { return target_->ReadText(container, pk, id); });
}

Result<Document> ForwardingStore::Create(std::string_view container, std::string_view pk, std::string_view id,
                                         json::value body, std::optional<int64_t> ttl_seconds) {
  return Through<Document>(StoreMethod::kCreate,
                           [&] { return target_->Create(container, pk, id, std::move(body), ttl_seconds); });
}

Result<Document> ForwardingStore::Replace(std::string_view container, std::string_view pk,
                                          std::string_view id, json::value body,
                                          std::optional<std::string> if_match,
                                          std::optional<int64_t> ttl_seconds) {
  return Through<Document>(StoreMethod::kReplace, [&] {
    return target_->Replace(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}

Result<Document> ForwardingStore::Upsert(std::string_view container, std::string_view pk, std::string_view id,
                                         json::value body, std::optional<std::string> if_match,
                                         std::optional<int64_t> ttl_seconds) {
  return Through<Document>(StoreMethod::kUpsert, [&] {
    return target_->Upsert(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  });
}

Status ForwardingStore::Delete(std::string_view container, std::string_view pk, std::string_view id,
                               std::optional<std::string> if_match) {
  return Through<void>(StoreMethod::kDelete,
                       [&] { return target_->Delete(container, pk, id, std::move(if_match)); });
}

Result<Document> ForwardingStore::Patch(std::string_view container, std::string_view pk, std::string_view id,
                                        std::vector<PatchOp> ops, std::vector<Condition> conditions,
                                        std::optional<std::string> if_match) {
  return Through<Document>(StoreMethod::kPatch, [&] {
    return target_->Patch(container, pk, id, std::move(ops), std::move(conditions), std::move(if_match));
  });
}

Result<BatchResult> ForwardingStore::Batch(std::string_view container, std::string_view pk,
                                           std::vector<WriteOp> ops, const Lease* fence) {
  return Through<BatchResult>(StoreMethod::kBatch,
                              [&] { return target_->Batch(container, pk, std::move(ops), fence); });
}

Result<QueryPage> ForwardingStore::Query(const QueryOptions& options) {
  return Through<QueryPage>(StoreMethod::kQuery, [&] { return target_->Query(options); });
}

Result<QueryPage> ForwardingStore::ListPartitions(std::string_view container, size_t max_items,
                                                  std::string_view continuation) {
  return Through<QueryPage>(StoreMethod::kListPartitions,
                            [&] { return target_->ListPartitions(container, max_items, continuation); });
}

Result<ChangePage> ForwardingStore::ReadChanges(std::string_view container, std::string_view continuation,
                                                size_t max_changes) {
  return Through<ChangePage>(StoreMethod::kReadChanges,
                             [&] { return target_->ReadChanges(container, continuation, max_changes); });
}

Result<bool> ForwardingStore::WaitForChanges(std::string_view container, std::string_view continuation,
                                             std::chrono::milliseconds timeout) {
  return Through<bool>(StoreMethod::kWaitForChanges,
                       [&] { return target_->WaitForChanges(container, continuation, timeout); });
}

Result<Lease> ForwardingStore::AcquireLease(std::string_view container, std::string_view pk,
                                            std::string_view name, std::string_view owner,
                                            std::chrono::milliseconds ttl) {
  return Through<Lease>(StoreMethod::kAcquireLease,
                        [&] { return target_->AcquireLease(container, pk, name, owner, ttl); });
}

Result<Lease> ForwardingStore::RenewLease(const Lease& lease, std::chrono::milliseconds ttl) {
  return Through<Lease>(StoreMethod::kRenewLease, [&] { return target_->RenewLease(lease, ttl); });
}

Status ForwardingStore::ReleaseLease(const Lease& lease) {
  return Through<void>(StoreMethod::kReleaseLease, [&] { return target_->ReleaseLease(lease); });
}

Result<size_t> ForwardingStore::PurgeExpired() {
  return Through<size_t>(StoreMethod::kPurgeExpired, [&] { return target_->PurgeExpired(); });
}

}  // namespace hcprp::store
