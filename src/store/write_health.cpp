#include "store/write_health.h"

namespace hcprp::store {
namespace {

bool IsFault(const Error& e) { return e.Is(ErrorCode::kIoError) || e.Is(ErrorCode::kUnavailable); }

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.ok() ? Status::Ok() : Status(r.error());
}

}  // namespace

void WriteHealthStore::Record(const Status& outcome) {
  std::lock_guard lock(mu_);
  if (outcome.ok()) {
    failure_.reset();
  } else if (IsFault(outcome.error())) {
    failure_ = outcome.error();
  }
}

std::optional<Error> WriteHealthStore::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

Status WriteHealthStore::CheckWritable() {
  if (!failure()) return Status::Ok();
  auto probe = Upsert(kLocks, "readyz", "probe", json::object{{"probe", true}});
  return StatusOf(probe);
}

Result<Document> WriteHealthStore::Create(std::string_view container, std::string_view pk,
                                          std::string_view id, json::value body,
                                          std::optional<int64_t> ttl_seconds) {
  auto r = ForwardingStore::Create(container, pk, id, std::move(body), ttl_seconds);
  Record(StatusOf(r));
  return r;
}

Result<Document> WriteHealthStore::Replace(std::string_view container, std::string_view pk,
                                           std::string_view id, json::value body,
                                           std::optional<std::string> if_match,
                                           std::optional<int64_t> ttl_seconds) {
  auto r = ForwardingStore::Replace(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  Record(StatusOf(r));
  return r;
}

Result<Document> WriteHealthStore::Upsert(std::string_view container, std::string_view pk,
                                          std::string_view id, json::value body,
                                          std::optional<std::string> if_match,
                                          std::optional<int64_t> ttl_seconds) {
  auto r = ForwardingStore::Upsert(container, pk, id, std::move(body), std::move(if_match), ttl_seconds);
  Record(StatusOf(r));
  return r;
}

Status WriteHealthStore::Delete(std::string_view container, std::string_view pk, std::string_view id,
                                std::optional<std::string> if_match) {
  Status s = ForwardingStore::Delete(container, pk, id, std::move(if_match));
  Record(s);
  return s;
}

Result<Document> WriteHealthStore::Patch(std::string_view container, std::string_view pk, std::string_view id,
                                         std::vector<PatchOp> ops, std::vector<Condition> conditions,
                                         std::optional<std::string> if_match) {
  auto r =
      ForwardingStore::Patch(container, pk, id, std::move(ops), std::move(conditions), std::move(if_match));
  Record(StatusOf(r));
  return r;
}

Result<BatchResult> WriteHealthStore::Batch(std::string_view container, std::string_view pk,
                                            std::vector<WriteOp> ops, const Lease* fence) {
  auto r = ForwardingStore::Batch(container, pk, std::move(ops), fence);
  Record(StatusOf(r));
  return r;
}

}  // namespace hcprp::store
