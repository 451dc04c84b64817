#include "backend/transition_planner.h"

namespace hcprp::backend {

bool MergeStatusFields(const json::object& fields, json::object* status) {
  bool changed = false;
  for (const auto& [key, value] : fields) {
    auto it = status->find(key);
    if (it != status->end() && it->value() == value) continue;
    (*status)[key] = value;
    changed = true;
  }
  return changed;
}

namespace {

// Adds the synced status fields to the resource's patch of the batch (or a patch of its own),
// conditioned on the stored clusterServiceStatus being the one read. False when they are what is stored.
bool PlanConditions(const ReadResource& res, const json::object& fields,
                    std::vector<store::WriteOp>* writes) {
  json::object status = res.doc.service_status;
  if (!MergeStatusFields(fields, &status)) return false;
  store::PatchOp set = arm::SetAt(arm::kPathServiceStatus, json::value(std::move(status)));
  for (store::WriteOp& w : *writes) {
    if (w.kind == store::WriteOp::Kind::kPatch && w.id == res.doc_id && w.container.empty()) {
      w.patch.push_back(std::move(set));
      w.conditions.push_back(res.service_status);
      return true;
    }
  }
  writes->push_back(
      store::WriteOp::Patch(res.doc_id, {std::move(set)}, {res.active_operation, res.service_status}));
  return true;
}

// The resource's part of recording a found object: added to the resource's patch of the batch (or
// a patch of its own).
void PlanFoundObject(const ReadResource& res, const FoundObject& found, std::vector<store::WriteOp>* writes) {
  if (!res.doc.internal_id.empty()) return;
  std::vector<store::PatchOp> set = {arm::SetAt(arm::kPathInternalId, json::value(found.href))};
  auto stored = res.doc.resource.find("observed");
  const bool holds_observed =
      stored != res.doc.resource.end() && stored->value().is_object() && !stored->value().as_object().empty();
  if (!found.observed.empty() && !holds_observed)
    set.push_back(arm::SetAt(arm::kPathObserved, json::value(found.observed)));
  for (store::WriteOp& w : *writes) {
    if (w.kind == store::WriteOp::Kind::kPatch && w.id == res.doc_id && w.container.empty()) {
      for (store::PatchOp& p : set) w.patch.push_back(std::move(p));
      return;
    }
  }
  writes->push_back(store::WriteOp::Patch(res.doc_id, std::move(set), {res.active_operation}));
}

}  // namespace

bool DeletesResource(const arm::OperationDocument& operation, const arm::StatusChange& change) {
  return operation.request == arm::OperationRequest::kDelete && change.status == arm::kStateSucceeded;
}

TransitionPlan PlanTransition(const TransitionInput& in) {
  TransitionPlan plan;
  plan.terminal = arm::IsTerminalState(in.change.status);
  const size_t op_write = arm::PlanStatusChange(in.operation, in.change, in.now, &plan.writes);
  plan.ended.push_back(op_write);
  if (in.found) {
    plan.writes[op_write].patch.push_back(
        arm::SetAt(arm::kPathOperationInternalId, json::value(in.found->href)));
  }
  if (!in.resource) return plan;
  const ReadResource& res = *in.resource;
  arm::ResourceAsRead read{res.doc_id, std::nullopt, res.active_operation};
  if (!(plan.terminal && DeletesResource(in.operation, in.change))) {
    arm::PlanResourceFollows(read, in.operation.request, in.change, &plan.writes);
    if (in.found) PlanFoundObject(res, *in.found, &plan.writes);
    if (in.conditions) plan.conditions = PlanConditions(res, *in.conditions, &plan.writes);
    if (plan.terminal && in.operation.request == arm::OperationRequest::kCreate &&
        in.change.status == arm::kStateSucceeded) {
      arm::ResourceDocument billed = res.doc;
      if (in.found && billed.internal_id.empty()) billed.internal_id = in.found->href;
      plan.billing.push_back(arm::PlanBillingCreation(billed, res.doc_id, in.partition_key, in.now));
    }
    return plan;
  }
  store::WriteOp del = store::WriteOp::Delete(res.doc_id);
  del.conditions.push_back(res.active_operation);
  plan.writes.push_back(std::move(del));
  plan.deleted.push_back(res.doc_id);
  // Children go with their parent; their operations end with it.
  for (const ReadChild& child : in.children) {
    plan.writes.push_back(store::WriteOp::Delete(child.resource.doc_id, child.resource.etag));
    if (child.active_operation && !arm::IsTerminalState(child.active_operation->status)) {
      plan.ended.push_back(arm::PlanEndWithParent(*child.active_operation, in.now, &plan.writes));
    }
    plan.deleted.push_back(child.resource.doc_id);
  }
  return plan;
}

}  // namespace hcprp::backend
