// What the backend learned of Cluster Service objects before the store records it (private to
// src/backend): the object a create made, found by a check or an event but not yet written on the
// operation; whether an operation's Cluster Service delete was issued; and recently made objects whose
// event came before any operation claimed them. In memory only: a restarted backend learns it again
// from its checks. Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/transition_planner.h"
#include "clusterservice/event.h"
#include "core/clock.h"
#include "core/mutex.h"

namespace hcprp::backend {

class ObjectMemo {
 public:
  // Unclaimed objects are kept this long after their creation, and at most this many.
  static constexpr Duration kUnclaimedKept = std::chrono::seconds(60);
  static constexpr size_t kMaxUnclaimed = 4096;

  // The object the create `op_id` made, until it is recorded (ForgetFound).
  void RememberFound(std::string_view pk, std::string_view op_id, FoundObject found) HCPRP_EXCLUDES(mu_);
  std::optional<FoundObject> FoundFor(std::string_view pk, std::string_view op_id) const HCPRP_EXCLUDES(mu_);
  void ForgetFound(std::string_view pk, std::string_view op_id) HCPRP_EXCLUDES(mu_);

  void MarkDeleteIssued(std::string_view pk, std::string_view op_id, bool issued) HCPRP_EXCLUDES(mu_);
  bool DeleteIssued(std::string_view pk, std::string_view op_id) const HCPRP_EXCLUDES(mu_);

  // Forgets all of an operation that ended.
  void ForgetEnded(std::string_view pk, std::string_view op_id) HCPRP_EXCLUDES(mu_);

  // Keeps `object`, seen at `now` and made at `created`, for a create that may claim it; false (not
  // kept) when it was made longer than kUnclaimedKept ago.
  bool KeepUnclaimed(clusterservice::ServiceObject object, TimePoint created, TimePoint now)
      HCPRP_EXCLUDES(mu_);
  // Copies of the kept objects made for an ARM resource named `name` (case-insensitively).
  std::vector<clusterservice::ServiceObject> UnclaimedNamed(std::string_view name) const HCPRP_EXCLUDES(mu_);
  void DropUnclaimed(std::string_view href) HCPRP_EXCLUDES(mu_);

 private:
  using Key = std::pair<std::string, std::string>;  // (partition key, operation id)
  struct Unclaimed {
    clusterservice::ServiceObject object;
    TimePoint seen;
  };

  mutable Mutex mu_;
  std::set<Key> delete_issued_ HCPRP_GUARDED_BY(mu_);
  std::map<Key, FoundObject> found_ HCPRP_GUARDED_BY(mu_);
  std::deque<Unclaimed> unclaimed_ HCPRP_GUARDED_BY(mu_);  // oldest first
};

}  // namespace hcprp::backend
