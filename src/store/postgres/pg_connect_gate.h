// When the store's pool may start opening a new connection. A connection normally opens in
// milliseconds. Across a network partition an attempt gets no answer: TCP retransmits its SYN 1 s and
// 3 s after the first, and libpq gives up at connect_timeout (5 s). Were every caller to start its
// own attempt and wait it out, callers would pile up behind the pool for as long as the partition
// lasts, and after the heal the first packet of each hanging attempt would leave only at its next
// retransmission, up to 2 s later. The gate instead lets attempts run freely while the server answers
// them, and once one has waited a period without any attempt succeeding since it started, lets a
// fresh one start only every period: after a heal an attempt's first SYN leaves within a period, and
// its success opens the gate for everyone.
//
// An attempt that no server answers (refused: nothing listens, a server restarting; unreachable;
// silent until connect_timeout) costs the servers nothing, so it starts no back-off: the first call
// after a server is back gets a session, and silent ones are handled by the rule above. An attempt
// that a server answers and turns down (no server takes writes while a standby is being promoted; a
// server starting up) costs that server a process start, tens of milliseconds of CPU on a small
// machine, taken from the promotion it waits for. After such an attempt the next starts only a
// back-off after it (and after the newest attempt): the back-off doubles with each one in a row,
// from `min_backoff` to `max_backoff`, and a success resets it.
#pragma once

#include <chrono>
#include <set>

namespace hcprp::store::postgres {

// Not thread-safe: the pool calls it under its lock.
class ConnectGate {
 public:
  using Clock = std::chrono::steady_clock;

  // How an attempt ended.
  enum class Outcome {
    kConnected,    // a session
    kNotAnswered,  // no server answered: refused, unreachable, or silent until connect_timeout
    kTurnedDown,   // a server answered and turned the session down (or a failure it does not know)
  };

  // An attempt in flight, from Start to Finish.
  struct Attempt {
    Clock::time_point started;
  };

  ConnectGate(std::chrono::milliseconds period, std::chrono::milliseconds min_backoff,
              std::chrono::milliseconds max_backoff)
      : period_(period), min_backoff_(min_backoff), max_backoff_(max_backoff) {}

  // Whether an attempt may start at `now`: the back-off after the last attempt turned down (if any
  // since the last success) has passed, and no attempt started since the last success has waited a period
  // yet, or the newest attempt started a period ago or more.
  [[nodiscard]] bool MayStart(Clock::time_point now) const;
  // When MayStart becomes true if no attempt starts or ends before (now, when it is true already).
  [[nodiscard]] Clock::time_point Opens(Clock::time_point now) const;
  // How long the oldest attempt that closes the gate has been waiting (zero when the gate is open
  // for that reason).
  [[nodiscard]] Clock::duration Waited(Clock::time_point now) const;

  // Records an attempt started at `now`.
  Attempt Start(Clock::time_point now);
  // Records the end of `attempt` at `now`.
  void Finish(const Attempt& attempt, Clock::time_point now, Outcome outcome);

  [[nodiscard]] std::chrono::milliseconds period() const { return period_; }
  // Attempts turned down since the last success.
  [[nodiscard]] int failures() const { return failures_; }
  // Whether the last attempt turned down (with none succeeding since) started at `t` or later.
  [[nodiscard]] bool TurnedDownSince(Clock::time_point t) const {
    return failures_ > 0 && last_failed_start_ >= t;
  }

 private:
  // The oldest attempt in flight that started after the last success, if any.
  [[nodiscard]] const Clock::time_point* OldestUnanswered() const;
  // The wait after the last attempt turned down: min_backoff_ doubled per one in a row, at most
  // max_backoff_.
  [[nodiscard]] Clock::duration Backoff() const;

  const std::chrono::milliseconds period_;
  const std::chrono::milliseconds min_backoff_;
  const std::chrono::milliseconds max_backoff_;
  std::multiset<Clock::time_point> in_flight_;  // start instants of the attempts in flight
  Clock::time_point newest_start_ = Clock::time_point::min();
  Clock::time_point last_connected_ = Clock::time_point::min();
  Clock::time_point last_failed_ = Clock::time_point::min();        // the end of the last one
  Clock::time_point last_failed_start_ = Clock::time_point::min();  // and its start
  int failures_ = 0;  // attempts turned down since the last success
};

}  // namespace hcprp::store::postgres
