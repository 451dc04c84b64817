#include "backend/ownership.h"

namespace hcprp::backend {

LeaderLease::LeaderLease(LeaderLeaseOptions options, store::Store* store, const Clock* clock, Logger logger)
    : options_(std::move(options)), store_(store), clock_(clock), logger_(std::move(logger)) {}

bool LeaderLease::HeldLocked() const {
  return lease_.has_value() && !suspect_ && clock_->Now() < lease_->expires_at;
}

bool LeaderLease::Tick() {
  std::lock_guard lock(mu_);
  TimePoint now = clock_->Now();
  if (lease_.has_value()) {
    if (now >= lease_->expires_at) {
      logger_.Warn("backend lease lapsed", {{"owner", options_.owner}});
      lease_.reset();
    } else if (suspect_ || now - last_renewal_ >= RenewInterval()) {
      auto renewed = store_->RenewLease(*lease_, options_.ttl);
      if (renewed.ok()) {
        lease_ = std::move(renewed).value();
        last_renewal_ = now;
        suspect_ = false;
        return false;
      }
      if (renewed.error().Is(ErrorCode::kUnavailable) || renewed.error().Is(ErrorCode::kTimeout)) {
        // Keep writing until the lease lapses by the clock; the store fences us if it does.
        return false;
      }
      logger_.Warn("backend lease lost", {{"owner", options_.owner}, {"error", renewed.error().ToString()}});
      lease_.reset();
      suspect_ = false;
      return false;
    } else {
      return false;
    }
  }
  auto acquired = store_->AcquireLease(store::kLocks, options_.partition_key, options_.name, options_.owner,
                                       options_.ttl);
  if (!acquired.ok()) return false;
  lease_ = std::move(acquired).value();
  last_renewal_ = now;
  suspect_ = false;
  logger_.Info("backend lease acquired",
               {{"owner", options_.owner}, {"fence", static_cast<int64_t>(lease_->fencing_token)}});
  return true;
}

bool LeaderLease::Active() const {
  std::lock_guard lock(mu_);
  return HeldLocked();
}

std::optional<store::Lease> LeaderLease::FenceFor(std::string_view) const {
  std::lock_guard lock(mu_);
  if (!HeldLocked()) return std::nullopt;
  return lease_;
}

void LeaderLease::FenceRefused(const store::Lease& lease) {
  std::lock_guard lock(mu_);
  if (lease_.has_value() && lease_->fencing_token == lease.fencing_token) suspect_ = true;
}

void LeaderLease::Release() {
  std::lock_guard lock(mu_);
  if (!lease_.has_value()) return;
  (void)store_->ReleaseLease(*lease_);
  lease_.reset();
}

}  // namespace hcprp::backend
