// Which partitions (subscriptions) this backend may write, and the fence its writes carry.
//
// The subscriptions are split into a fixed number of shards (a stable hash of the partition key).
// Each shard has a fenced lease in the locks container; a backend writes to a partition only with
// the lease of its shard. Live backends announce themselves with a member record (renewed with the
// leases) and each holds about shards / live-members of them: one that holds more than its share
// releases the surplus, one that holds less takes free or lapsed shards. When a backend dies its
// leases lapse after the TTL and the others take its shards over: a backend renews its leases
// before its member record, so the record expires last, and the others tick just after the
// earliest record they saw expires (NextTickIn) instead of waiting for their next renewal. When it
// stops cleanly it releases them and removes its member record, so the others take over at their
// next tick. The member record lists the etag of each lease held: a backend restarted under the
// same name after dying takes those leases back at once, with new fences, instead of waiting for
// them to lapse.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "store/store.h"

namespace hcprp::backend {

class Ownership {
 public:
  virtual ~Ownership() = default;

  // Acquires, renews, balances or gives up ownership. Called by the backend's lease loop every
  // RenewInterval() and at the start of every step; cheap when nothing is due. Returns true when
  // this backend gained ownership it did not have before (the caller then resynchronises).
  virtual bool Tick() = 0;
  // True when this backend owns anything at all.
  virtual bool Active() const = 0;
  // True for exactly one live backend (when leases are healthy): the one that does store-wide
  // chores such as orphan collection.
  virtual bool Coordinator() const = 0;
  // The lease to fence writes to `partition_key` with, or nullopt when this backend must not write
  // to it (not owned, or the lease lapsed by the Clock).
  virtual std::optional<store::Lease> FenceFor(std::string_view partition_key) const = 0;
  // The store refused a write fenced with `lease`: stop writing under it until a renewal proves
  // ownership.
  virtual void FenceRefused(const store::Lease& lease) = 0;
  // Gives ownership up (Stop()); others can take over at once.
  virtual void Release() = 0;
  virtual std::chrono::milliseconds RenewInterval() const = 0;
  // How long the lease loop may wait before the next Tick(): at most RenewInterval(), less when
  // something is due sooner (another backend's ownership lapsing).
  virtual std::chrono::milliseconds NextTickIn() const { return RenewInterval(); }
  // How many shards this backend holds (for stats).
  virtual size_t HeldShards() const = 0;
};

struct ShardedLeaseOptions {
  std::string owner;                            // this backend's name; one live process per name
  uint32_t shards = 8;                          // >= 1; every backend of a store must agree
  std::string partition_key = "hcprp-backend";  // in the locks container
  std::chrono::milliseconds ttl{3000};          // leases and member records; renewed every ttl/3
};

// Thread-safe. Tick() calls are serialised; FenceFor() never waits for the store.
class ShardedLeases final : public Ownership {
 public:
  ShardedLeases(ShardedLeaseOptions options, store::Store* store, const Clock* clock, Logger logger);

  // The shard of a partition key: FNV-1a of the lower-cased key, modulo `shards`.
  static uint32_t ShardOf(std::string_view partition_key, uint32_t shards);

  bool Tick() override;
  bool Active() const override;
  bool Coordinator() const override;
  std::optional<store::Lease> FenceFor(std::string_view partition_key) const override;
  void FenceRefused(const store::Lease& lease) override;
  void Release() override;
  std::chrono::milliseconds RenewInterval() const override { return options_.ttl / 3; }
  // Wakes the lease loop just after the earliest live member record of another backend expires, so
  // that the shards of a backend that died are taken within about one TTL of its last renewal.
  std::chrono::milliseconds NextTickIn() const override;
  size_t HeldShards() const override;
  // Live members seen at the last heartbeat (this backend included).
  size_t LiveMembers() const;

 private:
  struct Shard {
    std::optional<store::Lease> lease;
    TimePoint last_renewal{};
    bool suspect = false;  // a fenced write was refused
    // FenceFor() refused a caller because the lease had lapsed by the clock while its renewal was
    // still under way: the renewal that succeeds counts as gaining the shard, so that the work
    // skipped meanwhile is looked at again.
    mutable bool refused_while_lapsed = false;
  };
  bool HeldLocked(const Shard& s, TimePoint now) const HCPRP_REQUIRES(mu_);
  // True when a shard FenceFor() refused as lapsed is held again; clears the marks of held shards.
  bool RegainedLapsed(TimePoint now);
  // The leases this backend holds, as its member record lists them: [{"shard", "etag"}].
  json::array HeldLeasesJson() const;
  // Takes back, with new fences, the leases an earlier run under this backend's name still held as
  // its member record lists them (it died without releasing them); true when it took any.
  bool ReclaimEarlierLeases(TimePoint now) HCPRP_REQUIRES(tick_mu_);
  // Writes this backend's member record and counts the live ones.
  void Heartbeat(TimePoint now) HCPRP_REQUIRES(tick_mu_);
  // Renews due leases and drops lapsed or lost ones; true when it renewed any.
  bool RenewDue(TimePoint now) HCPRP_REQUIRES(tick_mu_);
  // Releases the surplus over the fair share or takes free shards up to it; returns true when it
  // took any.
  bool Balance(TimePoint now) HCPRP_REQUIRES(tick_mu_);
  std::string LeaseName(uint32_t shard) const { return "shard-" + std::to_string(shard); }

  // Constant after construction.
  const ShardedLeaseOptions options_;
  store::Store* const store_;
  const Clock* const clock_;
  const Logger logger_;
  const std::vector<uint32_t> preference_;  // order in which this backend takes shards

  Mutex tick_mu_;  // one Tick()/Release() at a time; held across store calls
  TimePoint last_heartbeat_ HCPRP_GUARDED_BY(tick_mu_){};
  TimePoint last_balance_ HCPRP_GUARDED_BY(tick_mu_){};
  bool heartbeat_once_ HCPRP_GUARDED_BY(tick_mu_) = false;
  bool reclaim_tried_ HCPRP_GUARDED_BY(tick_mu_) = false;

  mutable Mutex mu_;  // never held across store calls
  std::vector<Shard> shards_ HCPRP_GUARDED_BY(mu_);
  size_t live_members_ HCPRP_GUARDED_BY(mu_) = 1;
  std::optional<TimePoint> next_member_expiry_ HCPRP_GUARDED_BY(mu_);  // earliest of the other live members
};

}  // namespace hcprp::backend
