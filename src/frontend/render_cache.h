// Rendered resources (the JSON text of a resource as one api-version shows it), kept by the stored
// version they were rendered from, so that a GET or a list page renders only what changed since it
// was last shown. The key names the document version (id, etag, timestamp) and the api-version; a write gives
// the document a new etag, so an entry is never stale, only unused, and the least recently used
// entries leave once the cache holds more than its byte budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/mutex.h"

namespace hcprp::frontend {

class RenderCache {
 public:
  // `max_bytes` 0 keeps nothing.
  explicit RenderCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  static std::string Key(std::string_view api_version, std::string_view id, std::string_view etag,
                         int64_t timestamp_ms);

  // The text kept under `key`, or null. Thread-safe.
  std::shared_ptr<const std::string> Find(const std::string& key) HCPRP_EXCLUDES(mu_);
  // Keeps `text` under `key` (replacing what was there) and drops the least recently used entries
  // beyond the budget. Thread-safe.
  void Insert(const std::string& key, std::shared_ptr<const std::string> text) HCPRP_EXCLUDES(mu_);

  size_t Bytes() const HCPRP_EXCLUDES(mu_);
  size_t Entries() const HCPRP_EXCLUDES(mu_);
  // Finds that returned a text, and that returned null, since the cache was made.
  uint64_t Hits() const HCPRP_EXCLUDES(mu_);
  uint64_t Misses() const HCPRP_EXCLUDES(mu_);

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const std::string> text;
  };
  static size_t Cost(const Entry& e) { return e.key.size() + e.text->size() + 64; }
  void Erase(std::list<Entry>::iterator it) HCPRP_REQUIRES(mu_);

  const size_t max_bytes_;
  mutable Mutex mu_;
  std::list<Entry> lru_ HCPRP_GUARDED_BY(mu_);  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_ HCPRP_GUARDED_BY(mu_);
  size_t bytes_ HCPRP_GUARDED_BY(mu_) = 0;
  uint64_t hits_ HCPRP_GUARDED_BY(mu_) = 0;
  uint64_t misses_ HCPRP_GUARDED_BY(mu_) = 0;
};

}  // namespace hcprp::frontend
