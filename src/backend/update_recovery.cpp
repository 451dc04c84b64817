#include "backend/update_recovery.h"

#include <string>

#include "arm/operation_writes.h"
#include "clusterservice/mapping.h"

namespace hcprp::backend {

bool ShouldReadUnconfirmed(Duration age, const BackendOptions& options) {
  return age >= options.update_held_after;
}

UnconfirmedStep DecideUnconfirmed(Duration age, UpdateSeen seen, const BackendOptions& options) {
  if (!ShouldReadUnconfirmed(age, options)) return UnconfirmedStep::kWait;
  switch (seen) {
    case UpdateSeen::kHeld:
    case UpdateSeen::kGone:
      return UnconfirmedStep::kConfirm;
    case UpdateSeen::kNotHeld:
      return age >= options.update_recovery_grace ? UnconfirmedStep::kSend : UnconfirmedStep::kWait;
    case UpdateSeen::kNotRead:
      return UnconfirmedStep::kWait;
  }
  return UnconfirmedStep::kWait;
}

UnconfirmedStep AfterSent(const Result<json::object>& answer) {
  if (answer.ok()) return UnconfirmedStep::kConfirm;
  if (answer.error().Is(ErrorCode::kInvalidArgument)) return UnconfirmedStep::kFail;
  return UnconfirmedStep::kWait;  // busy (409), unreachable or failing: the next timer step tries again
}

std::vector<store::WriteOp> PlanUpdateConfirmation(const store::Document& op,
                                                   const std::optional<store::Document>& resource) {
  std::vector<store::WriteOp> writes;
  writes.push_back(
      store::WriteOp::Patch(op.id, {arm::RemoveAt(arm::kPathAwaitingClusterService)},
                            {arm::Unchanged(op.body, arm::kPathStatus),
                             {std::string(arm::kPathAwaitingClusterService), json::value(true)}}));
  if (!resource) return writes;
  const json::value* active = FindPointer(resource->body, arm::kPathActiveOperationId);
  if (active == nullptr || !active->is_string() || active->get_string() != op.id) return writes;
  writes.push_back(store::WriteOp::Patch(resource->id, {arm::SetAt(arm::kPathActiveOperationId, *active)},
                                         {arm::Unchanged(resource->body, arm::kPathActiveOperationId)}));
  return writes;
}

UpdateSeen UnconfirmedUpdates::Read(const arm::ResourceDocument& doc, const json::object& patch) {
  auto object = cs_->Get(doc.internal_id);
  if (object.ok())
    return clusterservice::ObjectHoldsUpdate(*object, patch) ? UpdateSeen::kHeld : UpdateSeen::kNotHeld;
  if (object.error().IsNotFound()) return UpdateSeen::kGone;
  ++counters_->errors;
  return UpdateSeen::kNotRead;
}

void UnconfirmedUpdates::Fail(const OperationRecord& op, const Error& refusal) {
  writer_->Transit(op.partition_key, op.id, [&](const OperationRecord& cur) -> std::optional<Transition> {
    if (!cur.awaiting_cluster_service) return std::nullopt;  // its frontend confirmed it meanwhile
    return FailedWith("InvalidRequestContent", refusal.message());
  });
  logger_->Warn("unconfirmed update refused by the Cluster Service",
                {{"operation", op.id}, {"error", refusal.ToString()}});
}

void UnconfirmedUpdates::Resolve(const OperationRecord& op) {
  const Duration age = op.start_time ? clock_->Now() - *op.start_time : options_->update_recovery_grace;
  if (!ShouldReadUnconfirmed(age, *options_)) return;
  auto found = FindResource(*store_, op.partition_key, op.external_id);
  if (!found.ok()) {
    ++counters_->errors;
    return;
  }
  // Without its resource, or superseded, the operation has nothing to send: the ordinary check
  // (or the delete that superseded it) ends it.
  UpdateSeen seen = UpdateSeen::kGone;
  std::optional<arm::ResourceDocument> doc;
  std::optional<json::object> patch;
  if (found->has_value()) {
    auto parsed = arm::ResourceDocument::FromBody((**found).body);
    if (parsed.ok() && parsed->active_operation_id == op.id && !parsed->internal_id.empty()) {
      auto body = clusterservice::UpdateRequestFor(*parsed);
      if (!body.ok()) {
        Fail(op, body.error());
        return;
      }
      patch = std::move(body).value();
      doc = std::move(parsed).value();
      seen = Read(*doc, *patch);
    }
  }
  UnconfirmedStep step = DecideUnconfirmed(age, seen, *options_);
  if (step == UnconfirmedStep::kSend) {
    auto answer = cs_->Update(doc->internal_id, *patch);
    step = AfterSent(answer);
    if (step == UnconfirmedStep::kFail) Fail(op, answer.error());
    if (step == UnconfirmedStep::kWait) ++counters_->errors;
  }
  if (step != UnconfirmedStep::kConfirm) return;
  if (writer_->ConfirmUpdate(op)) {
    ++counters_->recovered_updates;
    logger_->Info("unconfirmed update resolved",
                  {{"operation", op.id}, {"sent", seen == UpdateSeen::kNotHeld ? "backend" : "frontend"}});
  }
}

}  // namespace hcprp::backend
