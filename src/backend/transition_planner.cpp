#include "backend/transition_planner.h"

namespace hcprp::backend {

bool DeletesResource(const arm::OperationDocument& operation, const arm::StatusChange& change) {
  return operation.request == arm::OperationRequest::kDelete && change.status == arm::kStateSucceeded;
}

TransitionPlan PlanTransition(const TransitionInput& in) {
  TransitionPlan plan;
  plan.terminal = arm::IsTerminalState(in.change.status);
  plan.ended.push_back(arm::PlanStatusChange(in.operation, in.change, in.now, &plan.writes));
  if (!in.resource) return plan;
  const ReadResource& res = *in.resource;
  arm::ResourceAsRead read{res.doc_id, std::nullopt, res.active_operation};
  if (!(plan.terminal && DeletesResource(in.operation, in.change))) {
    arm::PlanResourceFollows(read, in.operation.request, in.change, &plan.writes);
    if (plan.terminal && in.operation.request == arm::OperationRequest::kCreate &&
        in.change.status == arm::kStateSucceeded) {
      plan.billing.push_back(arm::PlanBillingCreation(res.doc, res.doc_id, in.partition_key, in.now));
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
