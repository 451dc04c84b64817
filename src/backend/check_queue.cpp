#include "backend/check_queue.h"

namespace hcprp::backend {

bool CheckQueue::Push(Key key) {
  MutexLock lock(mu_);
  if (!queued_.insert(key).second) return false;
  queue_.push_back(std::move(key));
  return true;
}

std::optional<CheckQueue::Key> CheckQueue::Pop() {
  MutexLock lock(mu_);
  if (queue_.empty()) return std::nullopt;
  Key key = std::move(queue_.front());
  queue_.pop_front();
  queued_.erase(key);
  return key;
}

size_t CheckQueue::Size() const {
  MutexLock lock(mu_);
  return queue_.size();
}

}  // namespace hcprp::backend
