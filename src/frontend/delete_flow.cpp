// Starting the deletion of a resource and its children (docs/architecture.md, "A delete").
#include <vector>

#include "api/experimental.h"
#include "arm/operation_writes.h"
#include "frontend/internal.h"

namespace hcprp::frontend {
namespace {

// Cancels `op` and, when ARM asked to be notified of it, records the notification the backend owes.
void AppendCancel(const Env& env, const arm::OperationDocument& op, std::vector<store::WriteOp>* writes) {
  arm::PlanCancel(op, env.clock->Now(), writes);
}

// Writes that move one resource to Deleting with a new Delete operation (cancelling the active one).
// Returns nothing when the resource already has a Delete operation under way (`*under_way` is set).
Result<std::vector<store::WriteOp>> DeleteWrites(const Env& env, const LoadedResource& r, bool expose,
                                                 const RequestContext* ctx,
                                                 std::optional<arm::OperationDocument>* under_way,
                                                 arm::OperationDocument* created) {
  HCPRP_ASSIGN_OR_RETURN(std::optional<arm::OperationDocument> active, ActiveOperation(env, r));
  if (active.has_value() && active->request == arm::OperationRequest::kDelete) {
    *under_way = *active;
    return std::vector<store::WriteOp>();
  }
  arm::OperationDocument op =
      NewOperation(env, arm::OperationRequest::kDelete, r.doc.resource_id, r.doc.internal_id, r.doc.location);
  if (expose && ctx != nullptr) Expose(*ctx, op);
  if (const json::object* experimental = GetObject(r.doc.resource, "experimental"))
    op.deadline_seconds = GetInt(*experimental, api::kDeleteDeadlineSeconds);
  arm::ResourceAsRead read{r.doc_id, r.etag, std::nullopt};
  arm::StartDeletePlan plan = arm::PlanStartDelete(read, op, env.options.operation_ttl_seconds,
                                                   active.has_value() ? &*active : nullptr, env.clock->Now());
  if (created != nullptr) *created = std::move(op);
  return std::move(plan.writes);
}

}  // namespace

Result<arm::OperationDocument> StartDelete(Env& env, const RequestContext* ctx,
                                           const LoadedResource& target) {
  auto id = arm::ParseResourceId(target.doc.resource_id);
  if (!id.ok()) return Error::Corruption("resource document with a bad resourceId");
  const std::string pk = arm::PartitionKey(id->subscription_id);

  // Children first, in chunks, so that a crash leaves the target not yet deleting and a repeated
  // DELETE resumes where this one stopped (children already deleting are skipped).
  if (id->kind == arm::ResourceKind::kCluster) {
    store::QueryOptions q;
    q.container = std::string(store::kResources);
    q.partition_key = pk;
    q.resource_id_prefix = target.doc.resource_id + "/";
    q.max_items = std::max<size_t>(1, env.options.delete_batch_size);
    do {
      HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, env.store->Query(q));
      std::vector<store::WriteOp> batch;
      for (const auto& d : page.documents) {
        auto parsed = arm::ResourceDocument::FromBody(d.body);
        if (!parsed.ok()) continue;
        LoadedResource child{d.id, d.etag, std::move(parsed).value()};
        std::optional<arm::OperationDocument> under_way;
        HCPRP_ASSIGN_OR_RETURN(std::vector<store::WriteOp> writes,
                               DeleteWrites(env, child, false, nullptr, &under_way, nullptr));
        for (auto& w : writes) batch.push_back(std::move(w));
      }
      if (!batch.empty()) HCPRP_RETURN_IF_ERROR(env.store->Batch(store::kResources, pk, std::move(batch)));
      q.continuation = page.continuation;
    } while (!q.continuation.empty());
  }

  std::optional<arm::OperationDocument> under_way;
  arm::OperationDocument op;
  HCPRP_ASSIGN_OR_RETURN(std::vector<store::WriteOp> writes,
                         DeleteWrites(env, target, true, ctx, &under_way, &op));
  if (under_way) {
    // Already deleting: point at that operation, exposing it to this caller if nobody was shown it.
    if (!under_way->exposed() && ctx != nullptr) {
      arm::OperationDocument exposed = *under_way;
      Expose(*ctx, exposed);
      store::WriteOp w = store::WriteOp::Patch(
          exposed.id,
          {{store::PatchOp::Kind::kSet, "/properties/tenantId", json::value(exposed.tenant_id)},
           {store::PatchOp::Kind::kSet, "/properties/clientId", json::value(exposed.client_id)},
           {store::PatchOp::Kind::kSet, "/properties/operationId", json::value(exposed.operation_id)}},
          {{"/properties/operationId", std::nullopt}});
      HCPRP_RETURN_IF_ERROR(env.store->Batch(store::kResources, pk, {std::move(w)}));
      return exposed;
    }
    return *under_way;
  }
  // Credential operations of a cluster end with it.
  if (id->kind == arm::ResourceKind::kCluster) {
    store::QueryOptions q;
    q.container = std::string(store::kResources);
    q.partition_key = pk;
    q.resource_type = std::string(arm::kOperationDocType);
    q.non_terminal_only = true;
    q.max_items = 1000;
    do {
      HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, env.store->Query(q));
      for (const auto& d : page.documents) {
        auto other = arm::OperationDocument::FromBody(d.id, d.body);
        if (!other.ok() || !EqualsIgnoreCase(other->external_id, target.doc.resource_id)) continue;
        if (other->request == arm::OperationRequest::kRequestCredential ||
            other->request == arm::OperationRequest::kRevokeCredentials) {
          AppendCancel(env, *other, &writes);
        }
      }
      q.continuation = page.continuation;
    } while (!q.continuation.empty());
  }
  HCPRP_RETURN_IF_ERROR(env.store->Batch(store::kResources, pk, std::move(writes)));
  return op;
}

}  // namespace hcprp::frontend
