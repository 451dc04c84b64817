#include "backend/ownership.h"

#include <algorithm>
#include <numeric>

#include "core/json.h"
#include "core/time.h"

namespace hcprp::backend {
namespace {

constexpr std::string_view kMemberPrefix = "member-";
constexpr int64_t kMemberRecordTtlSeconds = 3600;  // garbage collection of records of dead members
// After another member's record expires, how long to wait before trying its shards: its leases were
// renewed just before its record was, so they expire a few milliseconds earlier.
constexpr std::chrono::milliseconds kLapseMargin{100};

std::vector<uint32_t> PreferenceOrder(std::string_view owner, uint32_t shards) {
  // Start at a place that depends on the owner so that backends starting together try different
  // shards first.
  std::vector<uint32_t> order(shards);
  uint32_t start = ShardedLeases::ShardOf(owner, shards);
  for (uint32_t i = 0; i < shards; ++i) order[i] = (start + i) % shards;
  return order;
}

}  // namespace

ShardedLeases::ShardedLeases(ShardedLeaseOptions options, store::Store* store, const Clock* clock,
                             Logger logger)
    : options_([&] {
        if (options.shards == 0) options.shards = 1;
        return std::move(options);
      }()),
      store_(store),
      clock_(clock),
      logger_(std::move(logger)),
      preference_(PreferenceOrder(options_.owner, options_.shards)),
      shards_(options_.shards) {}

uint32_t ShardedLeases::ShardOf(std::string_view partition_key, uint32_t shards) {
  uint64_t h = 14695981039346656037ull;
  for (char c : partition_key) {
    h ^= static_cast<unsigned char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    h *= 1099511628211ull;
  }
  return shards <= 1 ? 0 : static_cast<uint32_t>(h % shards);
}

bool ShardedLeases::HeldLocked(const Shard& s, TimePoint now) const {
  return s.lease.has_value() && !s.suspect && now < s.lease->expires_at;
}

void ShardedLeases::Heartbeat(TimePoint now) {
  json::object body{{"kind", "backendMember"},
                    {"owner", options_.owner},
                    {"expiresAt", FormatRfc3339(now + options_.ttl, true)},
                    {"leases", HeldLeasesJson()}};
  auto written =
      store_->Upsert(store::kLocks, options_.partition_key, std::string(kMemberPrefix) + options_.owner,
                     json::value(std::move(body)), std::nullopt, kMemberRecordTtlSeconds);
  if (!written.ok()) return;  // try again at the next tick; the count below keeps the last one
  last_heartbeat_ = now;
  store::QueryOptions q;
  q.container = std::string(store::kLocks);
  q.partition_key = options_.partition_key;
  q.max_items = 500;
  size_t live = 0;
  bool self = false;
  std::optional<TimePoint> next_expiry;
  while (true) {
    auto page = store_->Query(q);
    if (!page.ok()) return;
    for (const store::Document& d : page->documents) {
      if (!d.id.starts_with(kMemberPrefix)) continue;
      auto expires = ParseRfc3339(GetString(d.body.as_object(), "expiresAt").value_or(""));
      if (!expires.ok() || *expires <= now) continue;
      ++live;
      if (d.id.substr(kMemberPrefix.size()) == options_.owner) {
        self = true;
      } else if (!next_expiry || *expires < *next_expiry) {
        next_expiry = *expires;
      }
    }
    if (page->continuation.empty()) break;
    q.continuation = page->continuation;
  }
  MutexLock lock(mu_);
  live_members_ = std::max<size_t>(1, live + (self ? 0 : 1));
  next_member_expiry_ = next_expiry;
}

bool ShardedLeases::RenewDue(TimePoint now) {
  bool renewed_any = false;
  for (uint32_t i = 0; i < options_.shards; ++i) {
    std::optional<store::Lease> lease;
    {
      MutexLock lock(mu_);
      Shard& s = shards_[i];
      if (!s.lease.has_value()) continue;
      if (now >= s.lease->expires_at) {
        logger_.Warn("shard lease lapsed", {{"owner", options_.owner}, {"shard", static_cast<int64_t>(i)}});
        s.lease.reset();
        continue;
      }
      if (!s.suspect && now - s.last_renewal < RenewInterval()) continue;
      lease = s.lease;
    }
    auto renewed = store_->RenewLease(*lease, options_.ttl);
    MutexLock lock(mu_);
    Shard& s = shards_[i];
    if (!s.lease.has_value() || s.lease->fencing_token != lease->fencing_token) continue;
    if (renewed.ok()) {
      s.lease = std::move(renewed).value();
      s.last_renewal = now;
      s.suspect = false;
      renewed_any = true;
    } else if (!renewed.error().Is(ErrorCode::kUnavailable) && !renewed.error().Is(ErrorCode::kTimeout)) {
      // Unavailable: keep writing until the lease lapses by the clock; the store fences us if it does.
      logger_.Warn("shard lease lost", {{"owner", options_.owner},
                                        {"shard", static_cast<int64_t>(i)},
                                        {"error", renewed.error().ToString()}});
      s.lease.reset();
      s.suspect = false;
    }
  }
  return renewed_any;
}

bool ShardedLeases::Balance(TimePoint now) {
  size_t held = 0;
  size_t target = 0;
  {
    MutexLock lock(mu_);
    for (const Shard& s : shards_) held += s.lease.has_value() ? 1 : 0;
    target = (options_.shards + live_members_ - 1) / live_members_;
  }
  bool gained = false;
  if (held > target) {
    // Give up the surplus, last preferred first, so that a newcomer can take it at its next tick.
    for (auto it = preference_.rbegin(); it != preference_.rend() && held > target; ++it) {
      std::optional<store::Lease> lease;
      {
        MutexLock lock(mu_);
        lease.swap(shards_[*it].lease);
      }
      if (!lease) continue;
      (void)store_->ReleaseLease(*lease);
      --held;
      logger_.Info("shard lease released to balance",
                   {{"owner", options_.owner}, {"shard", static_cast<int64_t>(*it)}});
    }
    return false;
  }
  for (uint32_t i : preference_) {
    if (held >= target) break;
    {
      MutexLock lock(mu_);
      if (shards_[i].lease.has_value()) continue;
    }
    auto acquired = store_->AcquireLease(store::kLocks, options_.partition_key, LeaseName(i), options_.owner,
                                         options_.ttl);
    if (!acquired.ok()) continue;  // held by another backend (kConflict) or the store is down
    logger_.Info("shard lease acquired", {{"owner", options_.owner},
                                          {"shard", static_cast<int64_t>(i)},
                                          {"fence", static_cast<int64_t>(acquired->fencing_token)}});
    MutexLock lock(mu_);
    shards_[i].lease = std::move(acquired).value();
    shards_[i].last_renewal = now;
    shards_[i].suspect = false;
    ++held;
    gained = true;
  }
  return gained;
}

json::array ShardedLeases::HeldLeasesJson() const {
  MutexLock lock(mu_);
  json::array leases;
  for (uint32_t i = 0; i < options_.shards; ++i) {
    const Shard& s = shards_[i];
    if (!s.lease.has_value()) continue;
    leases.push_back(json::object{{"shard", static_cast<int64_t>(i)}, {"etag", s.lease->etag}});
  }
  return leases;
}

bool ShardedLeases::ReclaimEarlierLeases(TimePoint now) {
  auto record =
      store_->Read(store::kLocks, options_.partition_key, std::string(kMemberPrefix) + options_.owner);
  if (!record.ok()) return false;  // none (a new name), or the store is down: leases lapse as usual
  const json::array* leases = GetArray(record->body.as_object(), "leases");
  if (leases == nullptr) return false;
  bool gained = false;
  for (const json::value& item : *leases) {
    const json::object* o = item.if_object();
    if (o == nullptr) continue;
    auto shard = GetInt(*o, "shard");
    auto etag = GetString(*o, "etag");
    if (!shard || *shard < 0 || *shard >= static_cast<int64_t>(options_.shards) || !etag) continue;
    const auto i = static_cast<uint32_t>(*shard);
    store::Lease earlier;
    earlier.container = std::string(store::kLocks);
    earlier.partition_key = options_.partition_key;
    earlier.name = LeaseName(i);
    earlier.owner = options_.owner;
    earlier.etag = std::string(*etag);
    // Succeeds only while the lease is as that incarnation last recorded it: then nobody else took
    // it since, and acquiring it again gives a new fence that refuses the earlier holder's writes.
    if (!store_->ReleaseLease(earlier).ok()) continue;
    auto acquired = store_->AcquireLease(store::kLocks, options_.partition_key, LeaseName(i), options_.owner,
                                         options_.ttl);
    if (!acquired.ok()) continue;
    logger_.Info("shard lease taken back from an earlier run",
                 {{"owner", options_.owner},
                  {"shard", static_cast<int64_t>(i)},
                  {"fence", static_cast<int64_t>(acquired->fencing_token)}});
    MutexLock lock(mu_);
    shards_[i].lease = std::move(acquired).value();
    shards_[i].last_renewal = now;
    shards_[i].suspect = false;
    gained = true;
  }
  return gained;
}

bool ShardedLeases::Tick() {
  MutexLock tick(tick_mu_);
  TimePoint now = clock_->Now();
  // Before the first heartbeat, which replaces the record that lists them.
  bool reclaimed = false;
  if (!reclaim_tried_) {
    reclaim_tried_ = true;
    reclaimed = ReclaimEarlierLeases(now);
  }
  bool member_lapsed = false;
  {
    MutexLock lock(mu_);
    member_lapsed = next_member_expiry_.has_value() && now >= *next_member_expiry_ + kLapseMargin;
  }
  bool heartbeat = !heartbeat_once_ || now - last_heartbeat_ >= RenewInterval() || member_lapsed;
  bool due = heartbeat || now - last_balance_ >= RenewInterval();
  // Leases first, then the member record: the record then never expires before this backend's
  // leases do, and whoever sees it lapse may take the shards at once. The record lists the leases'
  // latest etags, so it is written again whenever one changed.
  if (RenewDue(now)) heartbeat = true;
  if (heartbeat) {
    heartbeat_once_ = true;
    Heartbeat(now);
  }
  // A backend that holds nothing has nothing else to do: it looks for work at every tick.
  if (due || HeldShards() == 0) {
    last_balance_ = now;
    if (Balance(now)) {
      Heartbeat(now);  // lists the leases just acquired
      reclaimed = true;
    }
  }
  const bool regained = RegainedLapsed(now);
  return regained || reclaimed;
}

std::chrono::milliseconds ShardedLeases::NextTickIn() const {
  MutexLock lock(mu_);
  if (!next_member_expiry_) return RenewInterval();
  auto until =
      std::chrono::ceil<std::chrono::milliseconds>(*next_member_expiry_ + kLapseMargin - clock_->Now());
  if (until.count() <= 0) return RenewInterval();  // already acted on at a tick, or the heartbeat failed
  return std::min(RenewInterval(), until);
}

bool ShardedLeases::Active() const { return HeldShards() > 0; }

bool ShardedLeases::Coordinator() const {
  MutexLock lock(mu_);
  return HeldLocked(shards_[0], clock_->Now());
}

size_t ShardedLeases::HeldShards() const {
  MutexLock lock(mu_);
  TimePoint now = clock_->Now();
  size_t held = 0;
  for (const Shard& s : shards_) held += HeldLocked(s, now) ? 1 : 0;
  return held;
}

size_t ShardedLeases::LiveMembers() const {
  MutexLock lock(mu_);
  return live_members_;
}

std::optional<store::Lease> ShardedLeases::FenceFor(std::string_view partition_key) const {
  MutexLock lock(mu_);
  const Shard& s = shards_[ShardOf(partition_key, options_.shards)];
  if (!HeldLocked(s, clock_->Now())) {
    if (s.lease.has_value() && !s.suspect) s.refused_while_lapsed = true;
    return std::nullopt;
  }
  return s.lease;
}

bool ShardedLeases::RegainedLapsed(TimePoint now) {
  MutexLock lock(mu_);
  bool regained = false;
  for (Shard& s : shards_) {
    if (!s.refused_while_lapsed || !HeldLocked(s, now)) continue;
    s.refused_while_lapsed = false;
    regained = true;
  }
  return regained;
}

void ShardedLeases::FenceRefused(const store::Lease& lease) {
  MutexLock lock(mu_);
  for (Shard& s : shards_) {
    if (s.lease.has_value() && s.lease->name == lease.name && s.lease->fencing_token == lease.fencing_token)
      s.suspect = true;
  }
}

void ShardedLeases::Release() {
  MutexLock tick(tick_mu_);
  std::vector<store::Lease> held;
  {
    MutexLock lock(mu_);
    for (Shard& s : shards_) {
      if (s.lease.has_value()) held.push_back(*std::move(s.lease));
      s.lease.reset();
    }
  }
  for (const store::Lease& l : held) (void)store_->ReleaseLease(l);
  (void)store_->Delete(store::kLocks, options_.partition_key, std::string(kMemberPrefix) + options_.owner);
  heartbeat_once_ = false;
}

}  // namespace hcprp::backend
