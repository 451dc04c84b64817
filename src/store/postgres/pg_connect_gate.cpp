#include "store/postgres/pg_connect_gate.h"

namespace hcprp::store::postgres {

const ConnectGate::Clock::time_point* ConnectGate::OldestUnanswered() const {
  auto it = in_flight_.upper_bound(last_connected_);
  return it == in_flight_.end() ? nullptr : &*it;
}

bool ConnectGate::MayStart(Clock::time_point now) const { return Opens(now) <= now; }

ConnectGate::Clock::duration ConnectGate::Backoff() const {
  Clock::duration wait = min_backoff_;
  for (int i = 1; i < failures_ && wait < max_backoff_; ++i) wait *= 2;
  return std::min<Clock::duration>(wait, max_backoff_);
}

ConnectGate::Clock::time_point ConnectGate::Opens(Clock::time_point now) const {
  Clock::time_point opens = now;
  // Both are set once failures_ is positive, so this does not overflow.
  if (failures_ > 0) opens = std::max(opens, std::max(last_failed_, newest_start_) + Backoff());
  const Clock::time_point* oldest = OldestUnanswered();
  if (oldest == nullptr || now - *oldest < period_) return opens;
  // newest_start_ is at least *oldest, so this does not overflow.
  return std::max(opens, newest_start_ + period_);
}

ConnectGate::Clock::duration ConnectGate::Waited(Clock::time_point now) const {
  const Clock::time_point* oldest = OldestUnanswered();
  if (oldest == nullptr || now - *oldest < period_) return Clock::duration::zero();
  return now - *oldest;
}

ConnectGate::Attempt ConnectGate::Start(Clock::time_point now) {
  in_flight_.insert(now);
  newest_start_ = std::max(newest_start_, now);
  return Attempt{.started = now};
}

void ConnectGate::Finish(const Attempt& attempt, Clock::time_point now, Outcome outcome) {
  if (auto it = in_flight_.find(attempt.started); it != in_flight_.end()) in_flight_.erase(it);
  if (outcome == Outcome::kConnected) {
    last_connected_ = std::max(last_connected_, now);
    failures_ = 0;
  } else if (outcome == Outcome::kTurnedDown && attempt.started >= last_connected_) {
    // (one that began before the last success tells nothing about the servers now)
    if (now >= last_failed_) {
      last_failed_ = now;
      last_failed_start_ = attempt.started;
    }
    ++failures_;
  }
}

}  // namespace hcprp::store::postgres
