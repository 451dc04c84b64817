#include "backend/operation_index.h"

namespace hcprp::backend {

std::string OperationIndex::Key(std::string_view partition_key, std::string_view id) {
  std::string k(partition_key);
  k += '\n';
  k += id;
  return k;
}

namespace {

void EraseLink(std::unordered_multimap<std::string, std::string>& links, const std::string& href,
               const std::string& key) {
  auto [first, last] = links.equal_range(href);
  for (auto it = first; it != last; ++it) {
    if (it->second == key) {
      links.erase(it);
      return;
    }
  }
}

}  // namespace

bool OperationIndex::Upsert(OperationRecord op) {
  std::string key = Key(op.partition_key, op.id);
  MutexLock lock(mu_);
  auto it = by_key_.find(key);
  bool fresh = it == by_key_.end();
  if (!fresh && op.internal_id.empty()) op.internal_id = it->second.internal_id;
  if (op.request == arm::OperationRequest::kCreate && op.internal_id.empty()) {
    unknown_creates_.insert(key);
  } else {
    unknown_creates_.erase(key);
  }
  if (op.awaiting_cluster_service) {
    unconfirmed_.insert(key);
  } else {
    unconfirmed_.erase(key);
  }
  if (!fresh) {
    if (it->second.internal_id == op.internal_id) {
      // Still news when the frontend just confirmed an update's Cluster Service request.
      bool confirmed = it->second.awaiting_cluster_service && !op.awaiting_cluster_service;
      it->second = std::move(op);
      return confirmed;
    }
    if (!it->second.internal_id.empty()) EraseLink(by_internal_id_, it->second.internal_id, key);
    if (!op.internal_id.empty()) by_internal_id_.emplace(op.internal_id, key);
    it->second = std::move(op);
    return true;
  }
  if (!op.internal_id.empty()) by_internal_id_.emplace(op.internal_id, key);
  by_key_.emplace(std::move(key), std::move(op));
  return true;
}

void OperationIndex::Remove(std::string_view partition_key, std::string_view id) {
  std::string key = Key(partition_key, id);
  MutexLock lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  if (!it->second.internal_id.empty()) EraseLink(by_internal_id_, it->second.internal_id, key);
  unknown_creates_.erase(key);
  unconfirmed_.erase(key);
  by_key_.erase(it);
}

std::optional<OperationRecord> OperationIndex::Find(std::string_view partition_key,
                                                    std::string_view id) const {
  MutexLock lock(mu_);
  auto it = by_key_.find(Key(partition_key, id));
  if (it == by_key_.end()) return std::nullopt;
  return it->second;
}

std::vector<OperationRecord> OperationIndex::ByInternalId(std::string_view internal_id) const {
  std::vector<OperationRecord> out;
  MutexLock lock(mu_);
  auto [first, last] = by_internal_id_.equal_range(std::string(internal_id));
  for (auto it = first; it != last; ++it) {
    auto op = by_key_.find(it->second);
    if (op != by_key_.end()) out.push_back(op->second);
  }
  return out;
}

std::vector<OperationRecord> OperationIndex::All() const {
  std::vector<OperationRecord> out;
  MutexLock lock(mu_);
  out.reserve(by_key_.size());
  for (const auto& [key, op] : by_key_) out.push_back(op);
  return out;
}

std::vector<OperationRecord> OperationIndex::UnknownCreates() const {
  std::vector<OperationRecord> out;
  MutexLock lock(mu_);
  for (const std::string& key : unknown_creates_) {
    if (auto it = by_key_.find(key); it != by_key_.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<OperationRecord> OperationIndex::Unconfirmed() const {
  std::vector<OperationRecord> out;
  MutexLock lock(mu_);
  for (const std::string& key : unconfirmed_) {
    if (auto it = by_key_.find(key); it != by_key_.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<std::string> OperationIndex::InternalIds() const {
  std::vector<std::string> out;
  MutexLock lock(mu_);
  for (const auto& [href, key] : by_internal_id_) out.push_back(href);
  return out;
}

size_t OperationIndex::Size() const {
  MutexLock lock(mu_);
  return by_key_.size();
}

}  // namespace hcprp::backend
