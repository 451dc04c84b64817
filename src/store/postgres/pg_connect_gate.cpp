#include "store/postgres/pg_connect_gate.h"

namespace hcprp::store::postgres {

const ConnectGate::Clock::time_point* ConnectGate::OldestUnanswered() const {
  auto it = in_flight_.upper_bound(last_connected_);
  return it == in_flight_.end() ? nullptr : &*it;
}

bool ConnectGate::MayStart(Clock::time_point now) const { return Opens(now) <= now; }

ConnectGate::Clock::time_point ConnectGate::Opens(Clock::time_point now) const {
  const Clock::time_point* oldest = OldestUnanswered();
  if (oldest == nullptr || now - *oldest < period_) return now;
  // newest_start_ is at least *oldest, so this does not overflow.
  return std::max(now, newest_start_ + period_);
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

void ConnectGate::Finish(const Attempt& attempt, Clock::time_point now, bool connected) {
  if (auto it = in_flight_.find(attempt.started); it != in_flight_.end()) in_flight_.erase(it);
  if (connected) last_connected_ = std::max(last_connected_, now);
}

}  // namespace hcprp::store::postgres
