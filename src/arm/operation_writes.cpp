#include "arm/operation_writes.h"

#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::arm {

namespace {

bool TracksProvisioningState(OperationRequest r) {
  return r == OperationRequest::kCreate || r == OperationRequest::kUpdate || r == OperationRequest::kDelete;
}

store::Condition StatusIs(const OperationDocument& op) {
  return store::Condition{std::string(kPathStatus), json::value(op.status)};
}

std::string Stamp(TimePoint now) { return FormatRfc3339(now, true); }

OperationError Superseded() {
  return OperationError{std::string(kCanceledCode), std::string(kSupersededMessage), "", {}};
}

store::WriteOp ResourcePatch(const ResourceAsRead& resource, std::vector<store::PatchOp> patch) {
  std::vector<store::Condition> conditions;
  if (resource.active_operation) conditions.push_back(*resource.active_operation);
  return store::WriteOp::Patch(resource.doc_id, std::move(patch), std::move(conditions), resource.etag);
}

}  // namespace

OperationDocument NewOperation(OperationRequest request, std::string external_id, std::string internal_id,
                               std::string location, TimePoint now) {
  OperationDocument op;
  op.id = NewUuidV4();
  op.request = request;
  op.external_id = std::move(external_id);
  op.internal_id = std::move(internal_id);
  op.location = std::move(location);
  op.start_time = now;
  op.last_transition_time = now;
  op.status = std::string(request == OperationRequest::kDelete ? kStateDeleting : kStateAccepted);
  return op;
}

store::PatchOp SetAt(std::string_view path, json::value v) {
  return store::PatchOp{store::PatchOp::Kind::kSet, std::string(path), std::move(v)};
}

store::PatchOp RemoveAt(std::string_view path) {
  return store::PatchOp{store::PatchOp::Kind::kRemove, std::string(path), nullptr};
}

store::Condition Unchanged(const json::value& body, std::string_view path) {
  const json::value* v = FindPointer(body, path);
  if (v == nullptr) return store::Condition{std::string(path), std::nullopt};
  return store::Condition{std::string(path), *v};
}

void PlanPendingNotification(std::string_view op_id, std::string_view uri,
                             std::vector<store::WriteOp>* writes) {
  if (uri.empty()) return;
  writes->push_back(store::WriteOp::Create(PendingNotificationId(op_id), PendingNotificationBody(op_id, uri),
                                           kPendingNotificationTtlSeconds));
}

size_t PlanStatusChange(const OperationDocument& op, const StatusChange& change, TimePoint now,
                        std::vector<store::WriteOp>* writes) {
  std::vector<store::PatchOp> patch = {SetAt(kPathStatus, json::value(change.status)),
                                       SetAt(kPathLastTransitionTime, json::value(Stamp(now)))};
  if (change.error) patch.push_back(SetAt(kPathError, json::value(change.error->ToJson())));
  writes->push_back(store::WriteOp::Patch(op.id, std::move(patch), {StatusIs(op)}));
  const size_t index = writes->size() - 1;
  if (IsTerminalState(change.status)) PlanPendingNotification(op.id, op.notification_uri, writes);
  return index;
}

size_t PlanCancel(const OperationDocument& op, TimePoint now, std::vector<store::WriteOp>* writes) {
  return PlanStatusChange(op, StatusChange{std::string(kStateCanceled), Superseded()}, now, writes);
}

size_t PlanEndWithParent(const OperationDocument& op, TimePoint now, std::vector<store::WriteOp>* writes) {
  if (op.request == OperationRequest::kDelete) {
    return PlanStatusChange(op, StatusChange{std::string(kStateSucceeded), std::nullopt}, now, writes);
  }
  return PlanCancel(op, now, writes);
}

StartDeletePlan PlanStartDelete(const ResourceAsRead& resource, const OperationDocument& op,
                                int64_t ttl_seconds, const OperationDocument* active, TimePoint now) {
  StartDeletePlan plan;
  if (active != nullptr && !IsTerminalState(active->status))
    plan.canceled_index = PlanCancel(*active, now, &plan.writes);
  plan.writes.push_back(store::WriteOp::Create(op.id, op.ToBody(), ttl_seconds));
  plan.created_index = plan.writes.size() - 1;
  plan.writes.push_back(ResourcePatch(resource, {SetAt(kPathProvisioningState, json::value(kStateDeleting)),
                                                 SetAt(kPathActiveOperationId, json::value(op.id))}));
  return plan;
}

void PlanResourceFollows(const ResourceAsRead& resource, OperationRequest request, const StatusChange& change,
                         std::vector<store::WriteOp>* writes) {
  std::vector<store::PatchOp> patch;
  if (TracksProvisioningState(request))
    patch.push_back(SetAt(kPathProvisioningState, json::value(change.status)));
  if (IsTerminalState(change.status)) patch.push_back(RemoveAt(kPathActiveOperationId));
  if (!patch.empty()) writes->push_back(ResourcePatch(resource, std::move(patch)));
}

store::WriteOp PlanBillingCreation(const ResourceDocument& resource, std::string_view doc_id,
                                   std::string_view subscription_pk, TimePoint now) {
  json::object body;
  body["resourceId"] = resource.resource_id;
  body["resourceType"] = resource.resource_type;
  body["subscriptionId"] = subscription_pk;
  body["internalId"] = resource.internal_id;
  body["creationTime"] = Stamp(now);
  return store::WriteOp::Upsert(std::string(doc_id), std::move(body)).In(store::kBilling);
}

store::WriteOp PlanBillingDeletion(std::string_view doc_id, std::string_view etag, TimePoint now) {
  store::WriteOp patch =
      store::WriteOp::Patch(std::string(doc_id), {SetAt("/deletionTime", json::value(Stamp(now)))});
  patch.if_match = std::string(etag);
  return std::move(patch).In(store::kBilling);
}

}  // namespace hcprp::arm
