// In-memory index of the non-terminal operations the backend drives, keyed by (partition, id) and
// by the internal ID (Cluster Service href) they act on, so that a Cluster Service event finds its
// operations without touching the store.
//
// Thread-safe: every method takes the index's mutex; results are copies.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/documents.h"
#include "core/mutex.h"

namespace hcprp::backend {

class OperationIndex {
 public:
  // Inserts or refreshes an operation. Returns true when it was not indexed before or its
  // internal ID changed (the caller then checks it against the Cluster Service once). An internal ID
  // once known stays: a record without one (a create's operation as stored before its object was
  // recorded) keeps the one found.
  bool Upsert(OperationRecord op);
  void Remove(std::string_view partition_key, std::string_view id);
  std::optional<OperationRecord> Find(std::string_view partition_key, std::string_view id) const;
  std::vector<OperationRecord> ByInternalId(std::string_view internal_id) const;
  std::vector<OperationRecord> All() const;
  // The creates whose Cluster Service object is not known yet.
  std::vector<OperationRecord> UnknownCreates() const;
  // The updates whose frontend has not confirmed their Cluster Service request (awaitingClusterService).
  std::vector<OperationRecord> Unconfirmed() const;
  // The internal IDs of every indexed operation (for the orphan collector).
  std::vector<std::string> InternalIds() const;
  size_t Size() const;

 private:
  static std::string Key(std::string_view partition_key, std::string_view id);

  mutable Mutex mu_;
  std::map<std::string, OperationRecord> by_key_ HCPRP_GUARDED_BY(mu_);
  std::unordered_multimap<std::string, std::string> by_internal_id_ HCPRP_GUARDED_BY(mu_);  // href -> key
  std::set<std::string> unknown_creates_ HCPRP_GUARDED_BY(mu_);                             // keys
  std::set<std::string> unconfirmed_ HCPRP_GUARDED_BY(mu_);                                 // keys
};

}  // namespace hcprp::backend
