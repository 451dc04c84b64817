#include "frontend/render_cache.h"

namespace hcprp::frontend {

std::string RenderCache::Key(std::string_view api_version, std::string_view id, std::string_view etag,
                             int64_t timestamp_ms) {
  std::string key;
  key.reserve(api_version.size() + id.size() + etag.size() + 24);
  key.append(api_version).push_back('\n');
  key.append(id).push_back('\n');
  key.append(etag).push_back('\n');
  key += std::to_string(timestamp_ms);
  return key;
}

std::shared_ptr<const std::string> RenderCache::Find(const std::string& key) {
  MutexLock lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->text;
}

void RenderCache::Insert(const std::string& key, std::shared_ptr<const std::string> text) {
  if (text == nullptr) return;
  MutexLock lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) Erase(it->second);
  Entry e{key, std::move(text)};
  if (Cost(e) > max_bytes_) return;
  lru_.push_front(std::move(e));
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  bytes_ += Cost(lru_.front());
  while (bytes_ > max_bytes_ && !lru_.empty()) Erase(std::prev(lru_.end()));
}

void RenderCache::Erase(std::list<Entry>::iterator it) {
  bytes_ -= Cost(*it);
  index_.erase(std::string_view(it->key));
  lru_.erase(it);
}

size_t RenderCache::Bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

size_t RenderCache::Entries() const {
  MutexLock lock(mu_);
  return lru_.size();
}

uint64_t RenderCache::Hits() const {
  MutexLock lock(mu_);
  return hits_;
}

uint64_t RenderCache::Misses() const {
  MutexLock lock(mu_);
  return misses_;
}

}  // namespace hcprp::frontend
