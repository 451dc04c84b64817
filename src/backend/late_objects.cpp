#include "backend/late_objects.h"

#include "arm/documents.h"
#include "arm/resource_id.h"
#include "backend/documents.h"
#include "backend/state_mapping.h"

namespace hcprp::backend {

namespace {

constexpr size_t kQueryPage = 1000;

// Whether `op`, ended, says its resource's create will never record an object: a create that failed
// or was canceled (superseded by a DELETE, or by another create), or a delete that finished.
bool EndsTheResource(const arm::OperationDocument& op) {
  if (op.request == arm::OperationRequest::kCreate)
    return op.status == arm::kStateFailed || op.status == arm::kStateCanceled;
  return op.request == arm::OperationRequest::kDelete && op.status == arm::kStateSucceeded;
}

// Whether the document of `resource_id` points at `href` or names an operation in flight: the common
// case (the later events of a recent object), decided without reading the resource's operations.
Result<bool> KeptByItsDocument(store::Store& store, const std::string& pk, const std::string& resource_id,
                               std::string_view href) {
  HCPRP_ASSIGN_OR_RETURN(std::optional<store::Document> resource, FindResource(store, pk, resource_id));
  if (!resource) return false;
  const json::object* props = GetObject(resource->body.as_object(), "properties");
  return InternalIdOf(resource->body) == href || (props != nullptr && GetString(*props, "activeOperationId"));
}

}  // namespace

bool MayBeLateObject(std::string_view state, std::optional<TimePoint> created,
                     const std::optional<RestoreGap>& gap, TimePoint now) {
  if (state == "uninstalling" || state == clusterservice::kDeletedState || !created) return false;
  if (*created + kLateObjectAge < now) return false;
  return !(gap && gap->Contains(*created));
}

bool IsLateObject(std::string_view href, const LateObjectFacts& facts) {
  if (facts.document && facts.recorded_href == href) return false;
  if (facts.active_operation || facts.operation_in_flight) return false;
  return facts.ended;
}

bool LateObjects::CollectIfLate(const clusterservice::Event& event, const std::optional<RestoreGap>& gap) {
  if (KindOfHref(event.href) == ObjectKind::kCredential) return false;
  if (!MayBeLateObject(event.state, event.object.created, gap, clock_->Now())) return false;
  std::optional<arm::ResourceId> id = ResourceIdOfObject(*cs_, event.href, event.object);
  if (!id) return false;
  const std::string pk = arm::PartitionKey(id->subscription_id);
  if (!ownership_->FenceFor(pk)) return false;  // the partition's owner decides
  const std::string resource_id = id->ToString();
  Result<bool> kept = KeptByItsDocument(*store_, pk, resource_id, event.href);
  if (kept.ok() && *kept) return false;
  Result<LateObjectFacts> facts = FactsOf(pk, resource_id);
  if (!facts.ok()) {
    ++counters_->errors;  // a later event of the object, or the orphan collector, decides again
    return false;
  }
  if (!IsLateObject(event.href, *facts)) return false;
  Status deleted = cs_->Delete(event.href);
  if (!deleted.ok() && !deleted.error().IsNotFound()) {
    ++counters_->errors;
    return false;
  }
  ++counters_->gc_deleted;
  logger_->Warn(
      "deleted a Cluster Service object made by a create request that arrived after its create ended",
      {{"internalId", event.href}, {"resourceId", resource_id}});
  return true;
}

Result<LateObjectFacts> LateObjects::FactsOf(const std::string& pk, const std::string& resource_id) {
  LateObjectFacts facts;
  HCPRP_ASSIGN_OR_RETURN(std::optional<store::Document> resource, FindResource(*store_, pk, resource_id));
  if (resource) {
    HCPRP_ASSIGN_OR_RETURN(arm::ResourceDocument doc, arm::ResourceDocument::FromBody(resource->body));
    facts.document = true;
    facts.recorded_href = doc.internal_id;
    facts.active_operation = doc.active_operation_id.has_value();
    if (facts.active_operation) return facts;  // kept, whatever its operations say
  }
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = pk;
  q.resource_type = std::string(arm::kOperationDocType);
  q.max_items = kQueryPage;
  HCPRP_RETURN_IF_ERROR(store::ForEachDocument(*store_, q, [&](const store::Document& d) {
    Result<arm::OperationDocument> op = arm::OperationDocument::FromBody(d.id, d.body);
    if (!op.ok() || !EqualsIgnoreCase(op->external_id, resource_id)) return;
    if (!arm::IsTerminalState(op->status)) {
      facts.operation_in_flight = true;
    } else if (EndsTheResource(*op)) {
      facts.ended = true;
    }
  }));
  return facts;
}

}  // namespace hcprp::backend
