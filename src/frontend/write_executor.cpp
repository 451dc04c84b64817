#include "frontend/write_executor.h"

#include <utility>
#include <vector>

#include "api/api.h"
#include "clusterservice/mapping.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

// Commits a plan's first batch: the resource document as written, or LostRace when a concurrent
// write won (`race` says which store errors mean that).
template <typename IsRace>
std::variant<store::Document, LostRace, Error> CommitFirst(Env& env, std::string_view partition_key,
                                                           std::vector<store::WriteOp> writes, IsRace race) {
  auto written = env.store->Batch(store::kResources, partition_key, std::move(writes));
  if (!written.ok()) {
    if (race(written.error())) return LostRace{};
    return written.error();
  }
  return std::move(written->documents.at(0));
}

// A create the Cluster Service refused: it made nothing, so the create's documents go.
CloudError UndoRefusedCreate(Env& env, std::string_view request_id, const CreatePlan& plan, const Error& e) {
  auto undone = env.store->Batch(store::kResources, plan.partition_key, PlanCreateUndo(plan));
  if (!undone.ok()) {
    env.logger.Warn("could not remove documents of a rejected create",
                    {{"request_id", request_id}, {"error", undone.error().ToString()}});
  }
  if (e.Is(ErrorCode::kConflict)) return CloudError::Conflict(plan.doc.resource_id, e.message());
  return CloudError::InvalidRequestContent(e.message());
}

// A version change the Cluster Service refuses because no upgrade edge leads into the new minor's channel
// names the field and the value, as the real service's admission words it; other refusals carry the
// Cluster Service's reason as it is.
CloudError RefusedUpdateError(const json::object& requested, const Error& e) {
  constexpr std::string_view kNoPath = "no upgrade path to update channel";
  const size_t at = e.message().find(kNoPath);
  auto resource = api::FromStorage(requested);
  if (at == std::string::npos || !resource.ok()) return CloudError::InvalidRequestContent(e.message());
  const json::object* version = GetObject(resource->properties, "version");
  const std::string id(version != nullptr ? GetString(*version, "id").value_or("") : "");
  return CloudError::InvalidRequestContent(
      "Invalid value: " + json::serialize(json::value(id)) + ": " + e.message().substr(at),
      "properties.version.id");
}

// An update the Cluster Service refused: the previous document comes back and the operation goes.
// `requested` is the resource the update asked for (its stored form).
std::variant<CloudError, Error> UndoRefusedUpdate(Env& env, std::string_view request_id,
                                                  const UpdatePlan& plan, std::string_view written_etag,
                                                  const json::object& requested, const Error& e) {
  auto undone = env.store->Batch(store::kResources, plan.partition_key, PlanUpdateUndo(plan, written_etag));
  if (!undone.ok()) {
    if (undone.error().IsPreconditionFailed()) {
      // A concurrent request (a DELETE) moved the resource on and superseded this update.
      return CloudError::Conflict(plan.path, "The resource was changed concurrently; retry the request.");
    }
    env.logger.Error(
        "could not undo a refused update",
        {{"request_id", request_id}, {"operation_id", plan.op.id}, {"error", undone.error().ToString()}});
  }
  if (e.Is(ErrorCode::kInvalidArgument)) return RefusedUpdateError(requested, e);
  return e;
}

// The resource as the backend left it when it sent and confirmed this update itself (the operation no
// longer awaits the Cluster Service and was neither canceled nor failed); nullopt otherwise.
std::optional<LoadedResource> TakenOverByBackend(Env& env, const UpdatePlan& plan) {
  auto op_doc = env.store->Read(store::kResources, plan.partition_key, ToLower(plan.op.id));
  if (!op_doc.ok()) return std::nullopt;
  auto op = arm::OperationDocument::FromBody(op_doc->id, op_doc->body);
  if (!op.ok() || op->awaiting_cluster_service || op->status == arm::kStateFailed ||
      op->status == arm::kStateCanceled) {
    return std::nullopt;
  }
  auto doc = env.store->Read(store::kResources, plan.partition_key, plan.previous->doc_id);
  if (!doc.ok()) return std::nullopt;
  auto parsed = arm::ResourceDocument::FromBody(std::move(doc->body));
  if (!parsed.ok()) return std::nullopt;
  return LoadedResource{plan.previous->doc_id, std::move(doc->etag), std::move(*parsed), doc->timestamp_ms};
}

// What follows an update the Cluster Service took: the operation's confirmation, then the assigned
// values the document lacks (`written` becomes the document's version after their record).
void RecordAccepted(Env& env, std::string_view request_id, const UpdatePlan& plan, const json::object& answer,
                    LoadedResource& written) {
  auto confirmed = env.store->Batch(store::kResources, plan.partition_key, {PlanUpdateConfirmed(plan)});
  if (!confirmed.ok() && !confirmed.error().IsNotFound()) {
    env.logger.Warn(
        "update confirmation not recorded",
        {{"request_id", request_id}, {"operation_id", plan.op.id}, {"error", confirmed.error().ToString()}});
  }
  // Values the Cluster Service assigned that the document lacks (its create was finished by the
  // backend, which records only the internal ID).
  auto record =
      PlanRecordObserved(written.doc_id, plan.known_observed,
                         clusterservice::ObservedFromClusterService(plan.kind, answer), written.etag);
  if (!record) return;
  auto patched = env.store->Batch(store::kResources, plan.partition_key, Writes(std::move(record->write)));
  if (!patched.ok()) return;
  written.etag = patched->documents.at(0).etag;
  written.timestamp_ms = patched->documents.at(0).timestamp_ms;
  written.doc.resource["observed"] = std::move(record->merged);
}

}  // namespace

CommitResult CommitCreate(Env& env, std::string_view request_id, CreatePlan& plan) {
  // The document exists, or (a child) its cluster changed or went since it was read: the batch's
  // other writes create documents, so only the condition on the cluster can find nothing.
  auto first = CommitFirst(env, plan.partition_key, std::move(plan.writes), [](const Error& e) {
    return e.IsAlreadyExists() || e.IsPreconditionFailed() || e.IsNotFound();
  });
  if (auto* lost = std::get_if<LostRace>(&first)) return *lost;
  if (auto* e = std::get_if<Error>(&first)) return std::move(*e);
  store::Document& doc = std::get<store::Document>(first);

  // The operation ID is the idempotency key: the backend's create recovery repeats this request.
  auto cs = env.cs->Create(plan.call.collection, plan.call.body, plan.call.idempotency_key);
  std::optional<json::object> assigned;
  if (!cs.ok()) {
    const Error& e = cs.error();
    if (e.Is(ErrorCode::kInvalidArgument) || e.Is(ErrorCode::kConflict)) {
      return UndoRefusedCreate(env, request_id, plan, e);
    }
    // Unreachable or failing: the Accepted operation is durable and the backend repeats the create.
    env.logger.Warn("cluster service create deferred to the backend",
                    {{"request_id", request_id}, {"operation_id", plan.op.id}, {"error", e.ToString()}});
  } else {
    // The answer shows what the Cluster Service assigned. The backend records it, with the internal
    // ID, when it finds the object (in the batch of the create's first status change), so a create
    // costs one write here.
    assigned = clusterservice::ObservedFromClusterService(plan.kind, *cs);
  }
  return Committed{LoadedResource{plan.doc_id, std::move(doc.etag), std::move(plan.doc), doc.timestamp_ms},
                   std::move(assigned)};
}

CommitResult CommitUpdate(Env& env, std::string_view request_id, UpdatePlan& plan) {
  auto first = CommitFirst(env, plan.partition_key, std::move(plan.writes),
                           [](const Error& e) { return e.IsPreconditionFailed() || e.IsAlreadyExists(); });
  if (auto* lost = std::get_if<LostRace>(&first)) return *lost;
  if (auto* e = std::get_if<Error>(&first)) return std::move(*e);
  store::Document& doc = std::get<store::Document>(first);
  LoadedResource written{plan.previous->doc_id, std::move(doc.etag), std::move(plan.doc), doc.timestamp_ms};

  auto cs = env.cs->Update(plan.call.href, plan.call.patch);
  if (!cs.ok()) {
    // The backend sends an update the frontend has not confirmed within a few seconds itself
    // (update recovery): when it did, the update goes on and the caller is told so.
    if (!cs.error().Is(ErrorCode::kInvalidArgument)) {
      if (auto taken = TakenOverByBackend(env, plan)) return Committed{std::move(*taken), std::nullopt};
    }
    auto refused = UndoRefusedUpdate(env, request_id, plan, written.etag, written.doc.resource, cs.error());
    if (auto* e = std::get_if<Error>(&refused)) return std::move(*e);
    return std::get<CloudError>(std::move(refused));
  }
  RecordAccepted(env, request_id, plan, *cs, written);
  return Committed{std::move(written), std::nullopt};
}

Result<arm::OperationDocument> CommitDelete(Env& env, const RequestContext& ctx,
                                            const LoadedResource& resource) {
  HCPRP_ASSIGN_OR_RETURN(arm::OperationDocument op, StartDelete(env, &ctx, resource));
  if (resource.doc.internal_id.empty()) return op;
  Status deleted = env.cs->Delete(resource.doc.internal_id);
  if (!deleted.ok() && !deleted.error().IsNotFound()) {
    env.logger.Warn(
        "cluster service delete deferred to the backend",
        {{"request_id", ctx.request_id}, {"operation_id", op.id}, {"error", deleted.error().ToString()}});
  }
  return op;
}

}  // namespace hcprp::frontend
