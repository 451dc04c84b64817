#include "frontend/write_plan.h"

#include <utility>

#include "arm/operation_writes.h"
#include "clusterservice/mapping.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

store::WriteOp CreateOperation(const arm::OperationDocument& op, int64_t ttl_seconds) {
  return store::WriteOp::Create(op.id, op.ToBody(), ttl_seconds);
}

std::string BusyMessage(const arm::OperationDocument& op) {
  return "The resource has an operation in progress (" + std::string(arm::OperationRequestName(op.request)) +
         ", status " + op.status + "); retry when it has finished.";
}

}  // namespace

Result<CreatePlan> PlanCreate(const arm::ResourceId& id, api::Resource resource, arm::OperationDocument op,
                              CreateInput in) {
  HCPRP_ASSIGN_OR_RETURN(json::object cs_body,
                         clusterservice::BuildClusterServiceCreateBody(id, resource, in.tenant_id));
  CreatePlan plan;
  plan.kind = id.kind;
  plan.partition_key = arm::PartitionKey(id.subscription_id);
  plan.doc_id = arm::ResourceDocumentId(in.resource_id);
  plan.doc.resource_type = std::string(arm::DocType(id.kind));
  plan.doc.resource_id = std::string(in.resource_id);
  plan.doc.location = std::move(in.location);
  plan.doc.active_operation_id = op.id;
  plan.doc.provisioning_state = std::string(arm::kStateAccepted);
  plan.doc.identity = resource.identity;
  plan.doc.system_data = std::move(in.system_data);
  plan.doc.tags = resource.tags;
  json::value written = plan.doc.ToBody();
  written.as_object()["properties"].as_object()["resource"] = api::ToStorage(resource);
  plan.writes = Writes(store::WriteOp::Create(plan.doc_id, std::move(written)),
                       CreateOperation(op, in.operation_ttl_seconds));
  if (!in.parent_doc_id.empty()) {
    plan.writes.push_back(store::WriteOp::Patch(std::string(in.parent_doc_id),
                                                {arm::SetAt(arm::kPathLastChildCreate, json::value(op.id))},
                                                {}, std::string(in.parent_etag)));
  }
  plan.call = {clusterservice::ClusterServiceCollection(id.kind, in.parent_internal_id), std::move(cs_body),
               op.id};
  plan.resource = std::move(resource);
  plan.op = std::move(op);
  return plan;
}

std::vector<store::WriteOp> PlanCreateUndo(const CreatePlan& plan) {
  store::WriteOp remove_doc = store::WriteOp::Delete(plan.doc_id);
  remove_doc.conditions.push_back({std::string(arm::kPathActiveOperationId), json::value(plan.op.id)});
  return Writes(std::move(remove_doc), store::WriteOp::Delete(plan.op.id));
}

std::optional<CloudError> UpdateRefusal(std::string_view path, const arm::ResourceDocument& existing,
                                        const std::optional<arm::OperationDocument>& active) {
  if (active.has_value()) return CloudError::Conflict(path, BusyMessage(*active));
  if (EqualsIgnoreCase(existing.provisioning_state, arm::kStateDeleting)) {
    return CloudError::Conflict(path, "The resource is being deleted.");
  }
  return std::nullopt;
}

std::variant<UpdatePlan, CloudError> PlanUpdate(const arm::ResourceId& id, std::string_view path,
                                                const LoadedResource& existing, api::Resource resource,
                                                arm::OperationDocument op,
                                                std::optional<json::object> system_data,
                                                int64_t operation_ttl_seconds) {
  if (id.kind == arm::ResourceKind::kNodePool && resource.location.empty())
    resource.location = existing.doc.location;
  if (existing.doc.internal_id.empty()) {
    return CloudError::Conflict(path, "The resource is not yet known to the Cluster Service; retry later.");
  }
  op.awaiting_cluster_service = true;  // until PlanUpdateConfirmed's write
  UpdatePlan plan;
  plan.kind = id.kind;
  plan.partition_key = arm::PartitionKey(id.subscription_id);
  plan.path = std::string(path);
  plan.previous = &existing;
  plan.doc = existing.doc;
  plan.doc.active_operation_id = op.id;
  plan.doc.provisioning_state = std::string(arm::kStateAccepted);
  plan.doc.identity = resource.identity;
  plan.doc.system_data = std::move(system_data);
  plan.doc.tags = resource.tags;
  plan.doc.resource = api::ToStorage(resource);
  plan.writes = Writes(store::WriteOp::Replace(existing.doc_id, plan.doc.ToBody(), existing.etag),
                       CreateOperation(op, operation_ttl_seconds));
  plan.call = {existing.doc.internal_id, clusterservice::ClusterServiceUpdateBody(id, resource)};
  plan.known_observed = std::move(resource.observed);
  plan.op = std::move(op);
  return plan;
}

std::vector<store::WriteOp> PlanUpdateUndo(const UpdatePlan& plan, std::string_view written_etag) {
  return Writes(
      store::WriteOp::Replace(plan.previous->doc_id, plan.previous->doc.ToBody(), std::string(written_etag)),
      store::WriteOp::Delete(plan.op.id));
}

store::WriteOp PlanUpdateConfirmed(const UpdatePlan& plan) {
  return store::WriteOp::Patch(plan.op.id, {arm::RemoveAt(arm::kPathAwaitingClusterService)});
}

std::optional<ObservedRecord> PlanRecordObserved(std::string_view doc_id, const json::object& known,
                                                 const json::object& answered,
                                                 std::string_view written_etag) {
  bool news = false;
  for (const auto& [key, value] : answered) {
    const json::value* held = known.if_contains(key);
    if (held == nullptr || *held != value) news = true;
  }
  if (!news) return std::nullopt;
  json::object merged = known;
  for (const auto& [key, value] : answered) merged[key] = value;
  store::WriteOp write =
      store::WriteOp::Patch(std::string(doc_id), {arm::SetAt(arm::kPathObserved, json::value(merged))}, {},
                            std::string(written_etag));
  return ObservedRecord{std::move(write), std::move(merged)};
}

}  // namespace hcprp::frontend
