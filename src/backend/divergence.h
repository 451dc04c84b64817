// What the backend decides when the store and the Cluster Service disagree in the ways a store restored
// from a backup leaves them (docs/backup.md), and the records of the objects it holds for the operator.
// Pure functions and plain values; read by the backend and by `hcprp check`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arm/documents.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::backend {

// The time in which the store heard nothing from any backend: from the newest place in the Cluster
// Service event stream that a backend saved (as the store holds it when this backend starts) to this
// backend's start. On a store restored from a backup it spans the time since the backup; after a plain
// restart, the downtime. Every Cluster Service object the resource provider made in that time while the
// store was the one restored has no resource document now.
struct RestoreGap {
  TimePoint since{};
  TimePoint until{};
  bool Contains(TimePoint t) const { return t > since && t <= until; }
};

// How far before the newest saved place the gap starts: the Cluster Service states creation times to
// the second, and its clock and the store's differ a little. Erring this way holds an orphan made just
// before the last save rather than collecting an object the restored store lost.
inline constexpr Duration kGapMargin = std::chrono::seconds(2);

// The gap from the saved places (the event follower's records, each with the store's commit time) and
// this backend's start, widened by kGapMargin; nullopt when no place was saved (a new store: nothing
// to restore from).
std::optional<RestoreGap> RestoreGapOf(const std::vector<store::Document>& saved_places, TimePoint start);

// What the orphan collector does with a Cluster Service object that no resource document points at.
enum class UnknownObjectAction {
  kWait,     // younger than the window: a create in flight may still claim it
  kCollect,  // an orphan: deleted from the Cluster Service
  kHold,     // made in the restore gap: a customer's resource the restored store lost; never deleted,
             // recorded (HeldObject) and reported until the operator resolves it
};
// `created`: the object's creation time, when it has one; `first_seen`: when the collector first saw
// it. An object made in the gap is held whatever its age; otherwise it is collected once the earlier of
// the two is `window` old.
UnknownObjectAction DecideUnknownObject(std::optional<TimePoint> created, TimePoint first_seen,
                                        const std::optional<RestoreGap>& gap, Duration window, TimePoint now);

// Whether an idle resource must follow a deletion the Cluster Service made (or is making) of its object:
// the document points at `href`, has no operation in flight, and the object is uninstalling or gone. The
// delete that started it was recorded in a store that has since been restored from an older copy (or
// its Delete operation ended by its deadline); a Delete operation of the backend's own then ends it,
// and the document and its children go as any deleted resource's.
bool FollowsServiceDelete(const arm::ResourceDocument& doc, std::string_view href, std::string_view state,
                          bool gone);

// A Cluster Service object held for the operator (UnknownObjectAction::kHold), as recorded in the
// store's locks container (partition kHeldPartition, id HeldObjectId(href)) so that every backend and
// `hcprp check` know it, across restarts. The record goes when the object goes or a document claims it.
inline constexpr std::string_view kHeldPartition = "hcprp-backend";
struct HeldObject {
  std::string href;
  std::string resource_id;  // the ARM resource the object was made for; empty when it does not say
  std::string state;        // its Cluster Service state when held
  TimePoint created{};
  TimePoint gap_since{};  // RestoreGap::since when it was held
};
std::string HeldObjectId(std::string_view href);
json::value HeldObjectBody(const HeldObject& held);
// kInvalidArgument for a body that is not a held object's record.
Result<HeldObject> ParseHeldObject(const json::value& body);
// Every held object recorded in the store.
Result<std::vector<HeldObject>> ReadHeldObjects(store::Store& store);

}  // namespace hcprp::backend
