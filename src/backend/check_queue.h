// The queue of operations waiting for a status check against the Cluster Service (private to
// src/backend). An operation is queued at most once; thread-safe.
#pragma once

#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/mutex.h"

namespace hcprp::backend {

class CheckQueue {
 public:
  using Key = std::pair<std::string, std::string>;  // (partition key, operation id)

  // False when the operation was queued already.
  bool Push(Key key);
  // The oldest queued operation, removed from the queue; nullopt when empty.
  std::optional<Key> Pop();
  size_t Size() const;

 private:
  mutable Mutex mu_;
  std::deque<Key> queue_ HCPRP_GUARDED_BY(mu_);
  std::set<Key> queued_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::backend
