// When the store's pool may start opening a new connection. A connection normally opens in
// milliseconds. Across a network partition an attempt gets no answer: TCP retransmits its SYN 1 s and
// 3 s after the first, and libpq gives up at connect_timeout (5 s). Were every caller to start its
// own attempt and wait it out, callers would pile up behind the pool for as long as the partition
// lasts, and after the heal the first packet of each hanging attempt would leave only at its next
// retransmission, up to 2 s later. The gate instead lets attempts run freely while the server answers
// them, and once one has waited a period without any attempt succeeding since it started, lets a
// fresh one start only every period: after a heal an attempt's first SYN leaves within a period, and
// its success opens the gate for everyone. Refused attempts end at once and never close the gate.
#pragma once

#include <chrono>
#include <set>

namespace hcprp::store::postgres {

// Not thread-safe: the pool calls it under its lock.
class ConnectGate {
 public:
  using Clock = std::chrono::steady_clock;

  // An attempt in flight, from Start to Finish.
  struct Attempt {
    Clock::time_point started;
  };

  explicit ConnectGate(std::chrono::milliseconds period) : period_(period) {}

  // Whether an attempt may start at `now`: no attempt started since the last success has waited a
  // period yet, or the newest attempt started a period ago or more.
  [[nodiscard]] bool MayStart(Clock::time_point now) const;
  // When MayStart becomes true if no attempt starts or ends before (now, when it is true already).
  [[nodiscard]] Clock::time_point Opens(Clock::time_point now) const;
  // How long the oldest attempt that closes the gate has been waiting (zero when the gate is open
  // for that reason).
  [[nodiscard]] Clock::duration Waited(Clock::time_point now) const;

  // Records an attempt started at `now`.
  Attempt Start(Clock::time_point now);
  // Records the end of `attempt` at `now`: `connected` when it gave a session.
  void Finish(const Attempt& attempt, Clock::time_point now, bool connected);

  [[nodiscard]] std::chrono::milliseconds period() const { return period_; }

 private:
  // The oldest attempt in flight that started after the last success, if any.
  [[nodiscard]] const Clock::time_point* OldestUnanswered() const;

  const std::chrono::milliseconds period_;
  std::multiset<Clock::time_point> in_flight_;  // start instants of the attempts in flight
  Clock::time_point newest_start_ = Clock::time_point::min();
  Clock::time_point last_connected_ = Clock::time_point::min();
};

}  // namespace hcprp::store::postgres
