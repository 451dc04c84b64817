// The writes of a PUT or PATCH of a cluster, node pool or external auth, planned by pure functions
// from what the request read and decoded: the store batch to commit first, the Cluster Service
// request to make once it committed, the undo if the Cluster Service refuses, and the writes that
// follow its answer. Nothing here reads the store, the clock or the Cluster Service; write_executor.h
// carries a plan out (docs/architecture.md, "A create, end to end" and "An update, end to end").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/api.h"
#include "arm/cloud_error.h"
#include "arm/documents.h"
#include "arm/resource_id.h"
#include "core/json.h"
#include "core/result.h"
#include "frontend/internal.h"
#include "store/store.h"

namespace hcprp::frontend {

// POST `body` to `collection` with `idempotency_key` (the operation ID: a repeated create returns
// the object made the first time).
struct ClusterServiceCreateCall {
  std::string collection;
  json::object body;
  std::string idempotency_key;
};

// PATCH the object at `href` with `patch`.
struct ClusterServiceUpdateCall {
  std::string href;
  json::object patch;
};

// What a create knows beyond the decoded resource and its operation.
struct CreateInput {
  std::string_view resource_id;         // the resource's ID as the request gave it
  std::string location;                 // the region the resource lives in
  std::string_view parent_internal_id;  // a child's cluster href; empty for a cluster
  // A child's cluster document as read: the create commits only while it is unchanged
  // (arm::kPathLastChildCreate). Empty for a cluster.
  std::string_view parent_doc_id;
  std::string_view parent_etag;
  std::string_view tenant_id;               // the subscription's home tenant (clusters)
  std::optional<json::object> system_data;  // complete (every member set)
  int64_t operation_ttl_seconds = 0;
};

// A create: one batch writes the resource document (Accepted, activeOperationId = op.id) and the
// operation; then the Cluster Service is asked to make the object. Nothing else is written: the
// backend records the object's href when it finds the object.
struct CreatePlan {
  arm::ResourceKind kind = arm::ResourceKind::kCluster;
  std::string partition_key;
  std::string doc_id;
  // The first batch: [0] creates the resource document (failing when it exists), [1] the operation,
  // [2] for a child the mark on its cluster (failing when the cluster changed since it was read).
  std::vector<store::WriteOp> writes;
  ClusterServiceCreateCall call;
  // The resource document as written, without its canonical resource (the answer is rendered from
  // `resource`, which saves a copy of the property tree).
  arm::ResourceDocument doc;
  api::Resource resource;
  arm::OperationDocument op;
};

// The plan of creating `resource` at `id` with the new operation `op` (a Create, exposed to the
// caller). Fails only for an ID that is not a cluster or child resource ID.
Result<CreatePlan> PlanCreate(const arm::ResourceId& id, api::Resource resource, arm::OperationDocument op,
                              CreateInput in);

// The undo of a create the Cluster Service refused: the resource document goes (only while its
// activeOperationId is still the create's) and so does the operation.
std::vector<store::WriteOp> PlanCreateUndo(const CreatePlan& plan);

// Why a resource as read takes no update now (409): an operation of its own runs (`active`), or it
// is being deleted. Nothing when it may be updated.
std::optional<arm::CloudError> UpdateRefusal(std::string_view path, const arm::ResourceDocument& existing,
                                             const std::optional<arm::OperationDocument>& active);

// An update: one batch replaces the resource document (only if it is still the version read) and
// creates the operation, marked as awaiting the Cluster Service; then the Cluster Service is asked
// to change the object. When it took the change the mark is removed (PlanUpdateConfirmed) and the
// values its answer showed that the document lacks are recorded (PlanRecordObserved); when it
// refused, the previous document comes back (PlanUpdateUndo).
struct UpdatePlan {
  arm::ResourceKind kind = arm::ResourceKind::kCluster;
  std::string partition_key;
  std::string path;                          // the resource's ID as the request gave it
  const LoadedResource* previous = nullptr;  // the resource as read (not owned; outlives the plan)
  // The first batch: [0] replaces the resource document if_match the etag read, [1] the operation.
  std::vector<store::WriteOp> writes;
  ClusterServiceUpdateCall call;
  arm::ResourceDocument doc;    // the resource document as written
  json::object known_observed;  // the Cluster Service's values the written document holds
  arm::OperationDocument op;
};

// The plan of updating `existing` (the resource at `id`, `path` as the request gave it) to
// `resource` (decoded by the PUT or PATCH rules) with the new operation `op` (an Update, exposed to
// the caller); `system_data` is complete. 409 while the Cluster Service object is not known yet.
// `existing` must outlive the plan.
std::variant<UpdatePlan, arm::CloudError> PlanUpdate(const arm::ResourceId& id, std::string_view path,
                                                     const LoadedResource& existing, api::Resource resource,
                                                     arm::OperationDocument op,
                                                     std::optional<json::object> system_data,
                                                     int64_t operation_ttl_seconds);

// The undo of an update the Cluster Service refused: the previous resource document comes back if
// the document is still the one the update wrote (`written_etag`), and the operation goes.
std::vector<store::WriteOp> PlanUpdateUndo(const UpdatePlan& plan, std::string_view written_etag);

// The record that the Cluster Service took the update: from then on the backend may judge the
// operation by the object's state.
store::WriteOp PlanUpdateConfirmed(const UpdatePlan& plan);

// The values of the Cluster Service's answer (`answered`, in the shape of api::Resource::observed)
// that the written document lacks or holds differently, merged over `known` and set on the document
// if it is still the version written (`written_etag`). Nothing when the answer shows nothing new.
struct ObservedRecord {
  store::WriteOp write;
  json::object merged;
};
std::optional<ObservedRecord> PlanRecordObserved(std::string_view doc_id, const json::object& known,
                                                 const json::object& answered, std::string_view written_etag);

}  // namespace hcprp::frontend
