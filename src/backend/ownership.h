// Which partitions (subscriptions) this backend may write, and the fence its writes carry.
//
// Today one backend owns everything through one fenced lease (LeaderLease). The interface is what
// a later split of subscriptions among backends implements instead (one lease per shard).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"

namespace hcprp::backend {

class Ownership {
 public:
  virtual ~Ownership() = default;

  // Acquires, renews or gives up ownership. Called by the backend's timer loop often enough to
  // renew in time (RenewInterval()) and at the start of every ReconcileOnce(). Returns true when
  // this backend gained ownership it did not have before (the caller then resynchronises).
  virtual bool Tick() = 0;
  // True when this backend owns anything at all.
  virtual bool Active() const = 0;
  // The lease to fence writes to `partition_key` with, or nullopt when this backend must not write
  // to it (not owned, or the lease lapsed by the Clock).
  virtual std::optional<store::Lease> FenceFor(std::string_view partition_key) const = 0;
  // The store refused a write fenced with `lease`: stop writing until a renewal proves ownership.
  virtual void FenceRefused(const store::Lease& lease) = 0;
  // Gives ownership up (Stop()); another backend can take over at once.
  virtual void Release() = 0;
  virtual std::chrono::milliseconds RenewInterval() const = 0;
};

struct LeaderLeaseOptions {
  std::string owner;                            // this backend's name; unique per process
  std::string partition_key = "hcprp-backend";  // in the locks container
  std::string name = "leader";
  std::chrono::milliseconds ttl{10000};  // renewed every ttl/3
};

// One lease in the locks container for the whole store. Thread-safe.
class LeaderLease final : public Ownership {
 public:
  LeaderLease(LeaderLeaseOptions options, store::Store* store, const Clock* clock, Logger logger);

  bool Tick() override;
  bool Active() const override;
  std::optional<store::Lease> FenceFor(std::string_view partition_key) const override;
  void FenceRefused(const store::Lease& lease) override;
  void Release() override;
  std::chrono::milliseconds RenewInterval() const override { return options_.ttl / 3; }

 private:
  bool HeldLocked() const;  // REQUIRES mu_

  // Constant after construction.
  const LeaderLeaseOptions options_;
  store::Store* const store_;
  const Clock* const clock_;
  const Logger logger_;

  mutable std::mutex mu_;
  std::optional<store::Lease> lease_;  // guarded by mu_
  TimePoint last_renewal_{};           // guarded by mu_
  bool suspect_ = false;               // guarded by mu_: a fenced write was refused
};

}  // namespace hcprp::backend
