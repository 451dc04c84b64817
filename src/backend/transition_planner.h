// The writes of one status change of an operation, planned from the documents as read (private to
// src/backend). Pure: no I/O, no clock, no threads; the controller reads, calls PlanTransition and
// commits the plan in one fenced batch (see controller.h). The writes themselves come from
// arm/operation_writes.h, which the frontend uses too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "arm/documents.h"
#include "arm/operation_writes.h"
#include "core/clock.h"
#include "store/store.h"

namespace hcprp::backend {

// Sets each of `fields` (synced Cluster Service status fields) in `status`; false when every one
// already had that value.
bool MergeStatusFields(const json::object& fields, json::object* status);

// A resource document as read: its store id, etag and activeOperationId condition (arm::Unchanged of
// the stored body), and the typed body.
struct ReadResource {
  std::string doc_id;
  std::string etag;
  store::Condition active_operation;
  arm::ResourceDocument doc;
  store::Condition service_status;  // arm::Unchanged of its clusterServiceStatus (when conditions are set)
};

// A child resource deleted with its parent, and its non-terminal operation if it has one.
struct ReadChild {
  ReadResource resource;
  std::optional<arm::OperationDocument> active_operation;
};

// The Cluster Service object of a create, found by the backend before anything recorded it: its href
// and what the Cluster Service assigned (clusterservice::ObservedFromClusterService).
struct FoundObject {
  std::string href;
  json::object observed;
};

struct TransitionInput {
  std::string partition_key;         // the subscription's (billing records name it)
  arm::OperationDocument operation;  // as read; not terminal
  arm::StatusChange change;          // differs from operation.status
  // The operation's resource when its activeOperationId names the operation (else nullopt: the
  // operation was superseded and changes alone).
  std::optional<ReadResource> resource;
  // A Delete that Succeeded removes the resource and these (its children) with it.
  std::vector<ReadChild> children;
  TimePoint now{};
  // The Cluster Service status fields seen with the change (conditions, version history), when they belong to
  // the resource: written into its clusterServiceStatus in the same batch if they differ from the stored
  // ones, so that the status change and the conditions that came with it are one durable commit.
  std::optional<json::object> conditions;
  // A create's object not recorded yet: its internal ID goes into the operation and, when the
  // resource has none, into the resource with what the Cluster Service assigned (where the resource
  // holds nothing yet), in the transition's batch. A create's record costs no write of its own.
  std::optional<FoundObject> found;
};

struct TransitionPlan {
  std::vector<store::WriteOp> writes;  // one batch in the resources container
  std::vector<size_t> ended;           // batch positions of the operations the batch ends
  std::vector<std::string> deleted;    // resource document ids the batch deletes
  bool terminal = false;
  bool conditions = false;  // the batch writes TransitionInput::conditions
  // The billing record of a create that Succeeded (billing container; Transit appends it to the batch).
  std::vector<store::WriteOp> billing;
};

// True when the resource's operation ended with a Delete that Succeeded: the batch deletes the
// resource and its children (the caller then reads the children for TransitionInput::children).
bool DeletesResource(const arm::OperationDocument& operation, const arm::StatusChange& change);

TransitionPlan PlanTransition(const TransitionInput& in);

}  // namespace hcprp::backend
