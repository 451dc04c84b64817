#include "backend/condition_sync.h"

#include "arm/documents.h"
#include "arm/operation_writes.h"
#include "arm/resource_id.h"
#include "backend/documents.h"
#include "backend/state_mapping.h"
#include "backend/transition_planner.h"
#include "core/time.h"

namespace hcprp::backend {

namespace {

// The seconds an upgrade took when `after` records its completion: its newest version history entry is
// Completed where `before`'s was Partial for the same version, or another version (the upgrade's
// Partial entry not synced in between: its events came together); nullopt otherwise.
std::optional<double> CompletedUpgradeSeconds(const json::object& before, const json::object& after) {
  auto newest = [](const json::object& status) -> const json::object* {
    const json::array* h = GetArray(status, "version_history");
    return h != nullptr && !h->empty() ? h->front().if_object() : nullptr;
  };
  const json::object* was = newest(before);
  const json::object* now = newest(after);
  if (was == nullptr || now == nullptr || GetString(*now, "state").value_or("") != "Completed") {
    return std::nullopt;
  }
  if (GetString(*was, "version") == GetString(*now, "version") &&
      GetString(*was, "state").value_or("") != "Partial") {
    return std::nullopt;
  }
  auto started = ParseRfc3339(GetString(*now, "started_time").value_or(""));
  auto completed = ParseRfc3339(GetString(*now, "completion_time").value_or(""));
  if (!started.ok() || !completed.ok()) return std::nullopt;
  return std::chrono::duration<double>(*completed - *started).count();
}

}  // namespace

void ConditionSync::SyncIdle(const clusterservice::Event& event) {
  json::object fields = clusterservice::SyncedStatusFields(event.object.status);
  if (event.Deleted() || fields.empty()) return;
  // Conditions are synced for clusters and node pools only.
  const ObjectKind kind = KindOfHref(event.href);
  if (kind != ObjectKind::kCluster && kind != ObjectKind::kNodePool) return;
  std::optional<arm::ResourceId> id = ResourceIdOfObject(*cs_, event.href, event.object);
  if (!id) return;
  std::string pk = arm::PartitionKey(id->subscription_id);
  if (!ownership_->FenceFor(pk)) return;
  ++counters_->idle_condition_syncs;
  Sync(pk, id->ToString(), event.href, fields);
}

Status ConditionSync::SyncListed() {
  const std::string clusters_href = std::string(clusterservice::kApiPrefix) + "/clusters";
  HCPRP_ASSIGN_OR_RETURN(json::array clusters, cs_->List(clusters_href));
  for (const json::value& item : clusters) {
    const json::object* o = item.if_object();
    if (o == nullptr) continue;
    clusterservice::ServiceObject cluster = clusterservice::ParseServiceObject(*o);
    cluster.href = HrefOfListed(*o, clusters_href);
    if (cluster.href.empty() || !cluster.cluster_resource_id) continue;
    const arm::ResourceId& cluster_id = *cluster.cluster_resource_id;
    if (!ownership_->FenceFor(arm::PartitionKey(cluster_id.subscription_id))) continue;
    SyncListedObject(cluster_id, cluster);
    const std::string pools_href = cluster.href + "/node_pools";
    HCPRP_ASSIGN_OR_RETURN(json::array pools, cs_->List(pools_href));
    for (const json::value& pool_item : pools) {
      const json::object* p = pool_item.if_object();
      if (p == nullptr) continue;
      clusterservice::ServiceObject pool = clusterservice::ParseServiceObject(*p);
      pool.href = HrefOfListed(*p, pools_href);
      if (pool.href.empty() || pool.ArmName().empty()) continue;
      arm::ResourceId pool_id = cluster_id;
      pool_id.kind = arm::ResourceKind::kNodePool;
      pool_id.child_name = std::string(pool.ArmName());
      SyncListedObject(pool_id, pool);
    }
  }
  return Status::Ok();
}

void ConditionSync::SyncListedObject(const arm::ResourceId& id, const clusterservice::ServiceObject& object) {
  json::object fields = clusterservice::SyncedStatusFields(object.status);
  if (fields.empty()) return;
  Sync(arm::PartitionKey(id.subscription_id), id.ToString(), object.href, fields);
}

void ConditionSync::Sync(const std::string& pk, const std::string& resource_id, const std::string& href,
                         const json::object& fields) {
  auto fence = ownership_->FenceFor(pk);
  if (!fence) return;
  auto resource = FindResource(*store_, pk, resource_id);
  if (!resource.ok() || !resource->has_value()) return;
  const store::Document& res = **resource;
  auto doc = arm::ResourceDocument::FromBody(res.body);
  if (!doc.ok() || doc->internal_id != href) return;
  json::object service_status = doc->service_status;
  if (!MergeStatusFields(fields, &service_status)) return;
  const std::optional<double> upgrade = CompletedUpgradeSeconds(doc->service_status, service_status);
  // First the document as read with the new status, replaced if it is still that version: the body is
  // made here, on the caller's thread, not in the store's writer, which commits one write at a time
  // (SQLite). When the document changed since it was read (another field, or a newer sync), the
  // status path alone, conditioned on it being as read.
  std::vector<store::PatchOp> set{
      arm::SetAt(arm::kPathServiceStatus, json::value(std::move(service_status)))};
  json::value body = res.body;
  Result<store::BatchResult> r = Error::PreconditionFailed("the document could not be patched in memory");
  if (store::ApplyPatchOps(body, set).ok()) {
    store::WriteOp replace = store::WriteOp::Replace(res.id, std::move(body), res.etag);
    replace.ttl_seconds = res.ttl_seconds;
    r = store_->Batch(store::kResources, pk, {std::move(replace)}, &*fence);
  }
  if (!r.ok() && r.error().IsPreconditionFailed()) {
    r = store_->Batch(
        store::kResources, pk,
        {store::WriteOp::Patch(res.id, std::move(set), {arm::Unchanged(res.body, arm::kPathServiceStatus)})},
        &*fence);
  }
  if (r.ok() && upgrade && upgrade_seconds_ != nullptr) {
    const bool pool = href.find("/node_pools/") != std::string::npos;
    upgrade_seconds_->With({pool ? "node_pool" : "cluster"})->Observe(*upgrade);
  }
  if (!r.ok() && !r.error().IsPreconditionFailed() && !r.error().IsNotFound()) {
    ++counters_->errors;
    logger_->Warn("cannot sync conditions", {{"resource", res.id}, {"error", r.error().ToString()}});
  }
}

}  // namespace hcprp::backend
