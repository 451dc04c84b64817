// ARM asynchronous operation notifications: when an operation that carries a notificationUri ends,
// its operation status resource is POSTed there. Delivery retries with exponential backoff for a
// bounded number of attempts. A notification may carry the key of its pending-notification document
// (arm::kPendingNotificationDocType, written with the batch that ended the operation): when it is
// delivered or given up, the queue's `on_done` removes that document. A backend that dies before
// then leaves the document behind and the next owner of the partition delivers it (at least once).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
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
  // Called (from Deliver()) with the key of a keyed notification once it was delivered or given up.
  using DoneFn = std::function<void(const std::string& partition_key, const std::string& id)>;

  NotificationQueue(NotificationOptions options, Notifier* notifier, const Clock* clock, Logger logger,
                    DoneFn on_done = nullptr);

  // A keyed notification (non-empty id) already queued is not queued twice; returns false then.
  bool Enqueue(std::string uri, json::object body, std::string partition_key = "", std::string id = "");
  // True while the keyed notification is queued or being delivered.
  bool Contains(const std::string& partition_key, const std::string& id) const;
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
    std::string partition_key;
    std::string id;  // empty: not keyed
    int attempts = 0;
    TimePoint due;
  };
  void Done(const Item& item);  // EXCLUDES mu_

  // Constant after construction.
  const NotificationOptions options_;
  Notifier* const notifier_;
  const Clock* const clock_;
  const Logger logger_;
  const DoneFn on_done_;

  mutable Mutex mu_;
  std::deque<Item> items_ HCPRP_GUARDED_BY(mu_);
  std::set<std::pair<std::string, std::string>> keys_
      HCPRP_GUARDED_BY(mu_);  // keyed items queued or in flight
  NotificationCounters counters_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::backend
