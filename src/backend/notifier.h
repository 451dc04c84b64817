// ARM asynchronous operation notifications: when an operation that carries a notificationUri ends,
// its operation status resource is POSTed there. Delivery retries with exponential backoff for a
// bounded number of attempts; progress is kept in memory only (a backend that dies loses the
// notifications it had not delivered yet).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/result.h"

namespace hcprp::backend {

// Sends one notification. Implementations must be thread-safe. Ok means the receiver accepted it
// (2xx); any error is retried by the queue.
class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual Status Notify(std::string_view uri, const json::object& body) = 0;
};

struct NotificationOptions {
  int max_attempts = 8;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
};

struct NotificationCounters {
  uint64_t sent = 0;
  uint64_t failed_attempts = 0;
  uint64_t dropped = 0;  // gave up after max_attempts
};

// Pending notifications with their next attempt time (by the Clock). Thread-safe; Deliver() is
// called by one thread at a time (the backend's notifier thread or a test).
class NotificationQueue {
 public:
  NotificationQueue(NotificationOptions options, Notifier* notifier, const Clock* clock, Logger logger);

  void Enqueue(std::string uri, json::object body);
  // Attempts every notification that is due. Returns how many were delivered.
  size_t Deliver();
  // Time until the next attempt is due (zero if one is due now), or nullopt when empty.
  std::optional<Duration> NextDueIn() const;
  size_t Pending() const;
  NotificationCounters Counters() const;

 private:
  struct Item {
    std::string uri;
    json::object body;
    int attempts = 0;
    TimePoint due;
  };

  // Constant after construction.
  const NotificationOptions options_;
  Notifier* const notifier_;
  const Clock* const clock_;
  const Logger logger_;

  mutable std::mutex mu_;
  std::deque<Item> items_;         // guarded by mu_
  NotificationCounters counters_;  // guarded by mu_
};

}  // namespace hcprp::backend
