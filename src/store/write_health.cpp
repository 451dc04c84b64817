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
  MutexLock lock(mu_);
  if (outcome.ok()) {
    failure_.reset();
  } else if (IsFault(outcome.error())) {
    failure_ = outcome.error();
  }
}

std::optional<Error> WriteHealthStore::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

Status WriteHealthStore::CheckWritable() {
  if (!failure()) return Status::Ok();
  auto probe = Upsert(kLocks, "readyz", "probe", json::object{{"probe", true}});
  return StatusOf(probe);
}

Status WriteHealthStore::Intercept(StoreMethod method, const Forward& forward) {
  Status outcome = forward();
  if (WritesDocuments(method)) Record(outcome);
  return outcome;
}

}  // namespace hcprp::store
