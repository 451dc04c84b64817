// The cleanup of deleted subscriptions (private to src/backend): pages through a deleted
// subscription's resource documents and hands each to a callback that makes sure it has a Delete
// operation; a subscription whose pass finds nothing is done, one that still had resources is looked
// at again after `revisit` (stragglers). Only partitions this backend owns are swept. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "backend/counters.h"
#include "backend/ownership.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/mutex.h"
#include "store/store.h"

namespace hcprp::backend {

class SubscriptionSweeper {
 public:
  struct Options {
    size_t page_size = 100;
    Duration revisit{};
  };
  using EnsureDelete = std::function<void(const store::Document& resource)>;

  // Not owned; all must outlive this.
  SubscriptionSweeper(Options options, store::Store* store, Ownership* ownership, const Clock* clock,
                      const Logger* logger, Counters* counters, EnsureDelete ensure_delete)
      : options_(options),
        store_(store),
        ownership_(ownership),
        clock_(clock),
        logger_(logger),
        counters_(counters),
        ensure_delete_(std::move(ensure_delete)) {}

  // The subscription `pk` was deleted (idempotent).
  void OnDeleted(const std::string& pk) HCPRP_EXCLUDES(mu_);
  // One page of every due sweep; `exhaustive`: every sweep, to its end.
  void Run(bool exhaustive) HCPRP_EXCLUDES(mu_);
  size_t Active() const HCPRP_EXCLUDES(mu_);

 private:
  struct Sweep {
    std::string continuation;
    bool found_any = false;
    TimePoint due{};
  };
  // One page of a deleted subscription's resources.
  Status Page(const std::string& pk, Sweep* sweep);

  // Constant after construction.
  const Options options_;
  store::Store* const store_;
  Ownership* const ownership_;
  const Clock* const clock_;
  const Logger* const logger_;
  Counters* const counters_;
  const EnsureDelete ensure_delete_;

  mutable Mutex mu_;
  std::map<std::string, Sweep> sweeps_ HCPRP_GUARDED_BY(mu_);  // by partition
};

}  // namespace hcprp::backend
