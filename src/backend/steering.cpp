#include "backend/steering.h"

namespace hcprp::backend {

namespace {

Result<OperationRecord> ReadOperation(store::Store& store, std::string_view pk, std::string_view op_id) {
  HCPRP_ASSIGN_OR_RETURN(auto doc, store.Read(store::kResources, pk, op_id));
  auto op = ParseOperation(doc);
  if (!op) return Error::NotFound("no operation '" + std::string(op_id) + "'");
  return *op;
}

}  // namespace

Status Steering::FailOperation(std::string_view pk, std::string_view op_id, std::string code,
                               std::string message) {
  if (!ownership_->FenceFor(pk)) {
    return Error::Conflict("this backend does not own the subscription's shard");
  }
  HCPRP_ASSIGN_OR_RETURN(auto op, ReadOperation(*store_, pk, op_id));
  if (arm::IsTerminalState(op.status)) {
    return Error::PreconditionFailed("the operation is already " + op.status);
  }
  Outcome o = writer_->Transit(pk, op_id, [&](const OperationRecord&) { return FailedWith(code, message); });
  switch (o) {
    case Outcome::kApplied:
      logger_->Warn(
          "operation failed by an operator",
          {{"subscription", std::string(pk)}, {"operation", std::string(op_id)}, {"reason", message}});
      return Status::Ok();
    case Outcome::kNoChange:
      return Error::PreconditionFailed("the operation ended meanwhile");
    case Outcome::kGone:
      return Error::NotFound("no operation '" + std::string(op_id) + "'");
    case Outcome::kNotOwner:
      return Error::Conflict("this backend does not own the subscription's shard");
    case Outcome::kError:
      break;
  }
  return Error::Unavailable("the store refused the write; retry");
}

Status Steering::RedriveOperation(std::string_view pk, std::string_view op_id) {
  if (!ownership_->FenceFor(pk)) {
    return Error::Conflict("this backend does not own the subscription's shard");
  }
  HCPRP_ASSIGN_OR_RETURN(auto op, ReadOperation(*store_, pk, op_id));
  if (arm::IsTerminalState(op.status)) {
    return Error::PreconditionFailed("the operation is already " + op.status);
  }
  index_->Upsert(op);
  checks_->Enqueue(op);
  logger_->Info("operation re-driven by an operator",
                {{"subscription", std::string(pk)}, {"operation", std::string(op_id)}});
  return Status::Ok();
}

Result<OrphanPlan> Steering::PlanOrphanCollection() {
  OrphanPlan plan;
  plan.coordinator = ownership_->Coordinator();
  plan.window = options_->gc_window;
  HCPRP_RETURN_IF_ERROR(orphans_->Plan(&plan.candidates));
  return plan;
}

}  // namespace hcprp::backend
