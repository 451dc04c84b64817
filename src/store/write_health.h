// Whether the store can write: a decorator that watches the outcome of every write that passes
// through it, so readiness can follow what callers actually experience (a full disk, a read-only
// file or an I/O error fail writes while reads still succeed).
//
// A write that fails with kIoError or kUnavailable marks the store as failing; the next write that
// succeeds clears it. Outcomes that are answers about the data (kNotFound, kPreconditionFailed,
// kConflict, kAlreadyExists, kInvalidArgument) say nothing about health and are ignored.
//
// Thread-safe. The target is not owned and must outlive the wrapper.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "core/result.h"
#include "store/forwarding_store.h"

namespace hcprp::store {

class WriteHealthStore final : public ForwardingStore {
 public:
  explicit WriteHealthStore(Store* target) : ForwardingStore(target) {}

  // OK while no write has failed since the last one that succeeded. Otherwise tries one small write
  // (an upsert of a probe document in kLocks, partition "readyz") and returns its outcome: the
  // store recovers as soon as it can write again, even when no client writes.
  Status CheckWritable();

  // The error of the write that last failed, while failing.
  std::optional<Error> failure() const;

 protected:
  Status Intercept(StoreMethod method, const Forward& forward) override;

 private:
  void Record(const Status& outcome);

  mutable Mutex mu_;
  std::optional<Error> failure_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::store
