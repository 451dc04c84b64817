#include "backend/object_memo.h"

#include <algorithm>

#include "core/json.h"

namespace hcprp::backend {

namespace {

std::pair<std::string, std::string> KeyOf(std::string_view pk, std::string_view op_id) {
  return {std::string(pk), std::string(op_id)};
}

}  // namespace

void ObjectMemo::RememberFound(std::string_view pk, std::string_view op_id, FoundObject found) {
  MutexLock lock(mu_);
  found_.insert_or_assign(KeyOf(pk, op_id), std::move(found));
}

std::optional<FoundObject> ObjectMemo::FoundFor(std::string_view pk, std::string_view op_id) const {
  MutexLock lock(mu_);
  auto it = found_.find(KeyOf(pk, op_id));
  if (it == found_.end()) return std::nullopt;
  return it->second;
}

void ObjectMemo::ForgetFound(std::string_view pk, std::string_view op_id) {
  MutexLock lock(mu_);
  found_.erase(KeyOf(pk, op_id));
}

void ObjectMemo::MarkDeleteIssued(std::string_view pk, std::string_view op_id, bool issued) {
  MutexLock lock(mu_);
  if (issued) {
    delete_issued_.insert(KeyOf(pk, op_id));
  } else {
    delete_issued_.erase(KeyOf(pk, op_id));
  }
}

bool ObjectMemo::DeleteIssued(std::string_view pk, std::string_view op_id) const {
  MutexLock lock(mu_);
  return delete_issued_.count(KeyOf(pk, op_id)) > 0;
}

void ObjectMemo::ForgetEnded(std::string_view pk, std::string_view op_id) {
  MutexLock lock(mu_);
  found_.erase(KeyOf(pk, op_id));
  delete_issued_.erase(KeyOf(pk, op_id));
}

bool ObjectMemo::KeepUnclaimed(clusterservice::ServiceObject object, TimePoint created, TimePoint now) {
  if (now - created > kUnclaimedKept) return false;
  MutexLock lock(mu_);
  unclaimed_.push_back(Unclaimed{std::move(object), now});
  while (unclaimed_.size() > kMaxUnclaimed || now - unclaimed_.front().seen > kUnclaimedKept)
    unclaimed_.pop_front();
  return true;
}

std::vector<clusterservice::ServiceObject> ObjectMemo::UnclaimedNamed(std::string_view name) const {
  std::vector<clusterservice::ServiceObject> named;
  MutexLock lock(mu_);
  for (const Unclaimed& u : unclaimed_) {
    if (EqualsIgnoreCase(u.object.ArmName(), name)) named.push_back(u.object);
  }
  return named;
}

void ObjectMemo::DropUnclaimed(std::string_view href) {
  MutexLock lock(mu_);
  std::erase_if(unclaimed_, [&](const Unclaimed& u) { return u.object.href == href; });
}

}  // namespace hcprp::backend
