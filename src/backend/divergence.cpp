#include "backend/divergence.h"

#include <algorithm>

#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::backend {

namespace {

constexpr std::string_view kHeldKind = "heldClusterServiceObject";
constexpr std::string_view kHeldPrefix = "held-";
// The namespace of HeldObjectId's name-based UUIDs.
constexpr std::string_view kHeldNamespace = "9b0c6f5e-1d7a-4c2b-8e3f-5a6d7c8b9e01";

}  // namespace

std::optional<RestoreGap> RestoreGapOf(const std::vector<store::Document>& saved_places, TimePoint start) {
  std::optional<TimePoint> newest;
  for (const store::Document& d : saved_places) {
    TimePoint saved = FromUnixMillis(d.timestamp_ms);
    if (!newest || saved > *newest) newest = saved;
  }
  if (!newest || *newest >= start) return std::nullopt;
  return RestoreGap{*newest - kGapMargin, start};
}

UnknownObjectAction DecideUnknownObject(std::optional<TimePoint> created, TimePoint first_seen,
                                        const std::optional<RestoreGap>& gap, Duration window,
                                        TimePoint now) {
  if (created && gap && gap->Contains(*created)) return UnknownObjectAction::kHold;
  const TimePoint since = created ? std::min(*created, first_seen) : first_seen;
  return now - since >= window ? UnknownObjectAction::kCollect : UnknownObjectAction::kWait;
}

bool FollowsServiceDelete(const arm::ResourceDocument& doc, std::string_view href, std::string_view state,
                          bool gone) {
  if (doc.internal_id.empty() || doc.internal_id != href || doc.active_operation_id) return false;
  return gone || state == "uninstalling";
}

std::string HeldObjectId(std::string_view href) {
  return std::string(kHeldPrefix) + UuidV5(kHeldNamespace, ToLower(href));
}

json::value HeldObjectBody(const HeldObject& held) {
  return json::object{{"kind", kHeldKind},
                      {"internalId", held.href},
                      {"resourceId", held.resource_id},
                      {"state", held.state},
                      {"created", FormatRfc3339(held.created, true)},
                      {"gapSince", FormatRfc3339(held.gap_since, true)}};
}

Result<HeldObject> ParseHeldObject(const json::value& body) {
  const json::object* o = body.if_object();
  if (o == nullptr || GetString(*o, "kind").value_or("") != kHeldKind) {
    return Error::InvalidArgument("not a held object's record");
  }
  HeldObject held;
  held.href = std::string(GetString(*o, "internalId").value_or(""));
  held.resource_id = std::string(GetString(*o, "resourceId").value_or(""));
  held.state = std::string(GetString(*o, "state").value_or(""));
  auto created = ParseRfc3339(GetString(*o, "created").value_or(""));
  auto since = ParseRfc3339(GetString(*o, "gapSince").value_or(""));
  if (held.href.empty() || !created.ok() || !since.ok()) {
    return Error::InvalidArgument("a held object's record without internalId, created or gapSince");
  }
  held.created = *created;
  held.gap_since = *since;
  return held;
}

Result<std::vector<HeldObject>> ReadHeldObjects(store::Store& store) {
  store::QueryOptions q;
  q.container = std::string(store::kLocks);
  q.partition_key = std::string(kHeldPartition);
  q.max_items = 500;
  std::vector<HeldObject> out;
  HCPRP_RETURN_IF_ERROR(store::ForEachDocument(store, q, [&](const store::Document& d) {
    if (!d.id.starts_with(kHeldPrefix)) return;
    if (auto held = ParseHeldObject(d.body); held.ok()) out.push_back(std::move(held).value());
  }));
  return out;
}

}  // namespace hcprp::backend
