#include "backend/notifier.h"

#include <algorithm>

namespace hcprp::backend {

NotificationQueue::NotificationQueue(NotificationOptions options, Notifier* notifier, const Clock* clock,
                                     Logger logger, DoneFn on_done)
    : options_(options),
      notifier_(notifier),
      clock_(clock),
      logger_(std::move(logger)),
      on_done_(std::move(on_done)) {}

bool NotificationQueue::Enqueue(std::string uri, json::object body, std::string partition_key,
                                std::string id) {
  MutexLock lock(mu_);
  if (!id.empty() && !keys_.emplace(partition_key, id).second) return false;
  items_.push_back(
      Item{std::move(uri), std::move(body), std::move(partition_key), std::move(id), 0, clock_->Now()});
  return true;
}

bool NotificationQueue::Contains(const std::string& partition_key, const std::string& id) const {
  MutexLock lock(mu_);
  return keys_.count({partition_key, id}) > 0;
}

void NotificationQueue::Done(const Item& item) {
  if (item.id.empty()) return;
  // The document goes first: a reader that no longer finds the key queued finds no document either.
  if (on_done_) on_done_(item.partition_key, item.id);
  MutexLock lock(mu_);
  keys_.erase({item.partition_key, item.id});
}

size_t NotificationQueue::Deliver() {
  std::vector<Item> due;
  TimePoint now = clock_->Now();
  {
    MutexLock lock(mu_);
    for (auto it = items_.begin(); it != items_.end();) {
      if (it->due <= now) {
        due.push_back(std::move(*it));
        it = items_.erase(it);
      } else {
        ++it;
      }
    }
  }
  size_t delivered = 0;
  std::vector<Item> retry;
  for (Item& item : due) {
    Status s = notifier_ != nullptr ? notifier_->Notify(item.uri, item.body) : Status::Ok();
    ++item.attempts;
    if (s.ok()) {
      ++delivered;
      Done(item);
      continue;
    }
    bool give_up = item.attempts >= options_.max_attempts;
    {
      MutexLock lock(mu_);
      ++counters_.failed_attempts;
      if (give_up) ++counters_.dropped;
    }
    if (give_up) {
      logger_.Warn("notification dropped",
                   {{"uri", item.uri}, {"attempts", item.attempts}, {"error", s.error().ToString()}});
      Done(item);
      continue;
    }
    auto backoff = options_.initial_backoff;
    for (int i = 1; i < item.attempts && backoff < options_.max_backoff; ++i) backoff *= 2;
    backoff = std::min(backoff, options_.max_backoff);
    item.due = now + backoff;
    retry.push_back(std::move(item));
  }
  MutexLock lock(mu_);
  counters_.sent += delivered;
  for (Item& item : retry) items_.push_back(std::move(item));
  return delivered;
}

std::optional<Duration> NotificationQueue::NextDueIn() const {
  MutexLock lock(mu_);
  if (items_.empty()) return std::nullopt;
  TimePoint next = items_.front().due;
  for (const Item& item : items_) next = std::min(next, item.due);
  TimePoint now = clock_->Now();
  return next <= now ? Duration::zero() : next - now;
}

size_t NotificationQueue::Pending() const {
  MutexLock lock(mu_);
  return items_.size();
}

NotificationCounters NotificationQueue::Counters() const {
  MutexLock lock(mu_);
  return counters_;
}

}  // namespace hcprp::backend
