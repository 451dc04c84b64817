// Cluster Service objects made by a create request that arrived after its create had ended (private
// to src/backend). A request given up on can still reach the Cluster Service: a partition heals and
// TCP delivers what a frontend left in its socket, or a frontend dies with its request in the send
// queue (the kernel then sends it before the FIN). When the resource was deleted meanwhile, or its
// create failed or was superseded, nothing records the object; the orphan collector would delete it
// only after its window (an hour). The event follower hands every event of an object no operation
// knows to LateObjects, which deletes such an object at once.
//
// What it never deletes: an object its resource's document points at; an object of a resource with an
// operation in flight (a create in flight records the object it finds, status_checks.h); an object made
// while the store heard from no backend (the restore gap, divergence.h: the orphan collector holds it
// for the operator); an object older than kLateObjectAge (the orphan collector's); an object of a
// resource whose ending the store does not know (no create that ended Failed or Canceled, no Delete
// that Succeeded: an object made outside this resource provider, or one whose operations expired).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "backend/counters.h"
#include "backend/divergence.h"
#include "backend/ownership.h"
#include "clusterservice/client.h"
#include "clusterservice/event.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"

namespace hcprp::backend {

// An object made longer ago than this is not a late create's (its request landed when it was made,
// and its first event came then): it is left to the orphan collector.
inline constexpr Duration kLateObjectAge = std::chrono::minutes(10);

// Whether an object in `state`, made at `created`, of an event for which no operation is in flight,
// may be a late create's: not being deleted, made within kLateObjectAge of `now` (by a clock that may
// differ a little from the Cluster Service's), and not in the restore gap.
bool MayBeLateObject(std::string_view state, std::optional<TimePoint> created,
                     const std::optional<RestoreGap>& gap, TimePoint now);

// What the store holds of the resource an object names.
struct LateObjectFacts {
  bool document = false;             // the resource has a document
  std::string recorded_href;         // the document's internalId
  bool active_operation = false;     // the document names an operation in flight
  bool operation_in_flight = false;  // an operation document of the resource has not ended
  // An operation document of the resource says the resource ended: a Create that ended Failed or
  // Canceled, or a Delete that Succeeded.
  bool ended = false;
};

// Whether the object `href` (MayBeLateObject) is a late create's, to be deleted: no document points at
// it, nothing is in flight for its resource, and the store knows the resource's create or the resource
// ended.
bool IsLateObject(std::string_view href, const LateObjectFacts& facts);

// Reads the facts of an object's resource and deletes a late create's object from the Cluster Service.
// Thread-safe.
class LateObjects {
 public:
  // Not owned; all must outlive this.
  LateObjects(store::Store* store, clusterservice::Client* cs, const Ownership* ownership, const Clock* clock,
              const Logger* logger, Counters* counters)
      : store_(store), cs_(cs), ownership_(ownership), clock_(clock), logger_(logger), counters_(counters) {}

  // For an event of an object no operation is in flight for: deletes the object when it is a late
  // create's (above) and this backend owns its resource's partition. True when it issued the delete.
  bool CollectIfLate(const clusterservice::Event& event, const std::optional<RestoreGap>& gap);

 private:
  // The facts of `resource_id` in partition `pk`; the store's error.
  Result<LateObjectFacts> FactsOf(const std::string& pk, const std::string& resource_id);

  // Constant after construction.
  store::Store* const store_;
  clusterservice::Client* const cs_;
  const Ownership* const ownership_;
  const Clock* const clock_;
  const Logger* const logger_;
  Counters* const counters_;
};

}  // namespace hcprp::backend
