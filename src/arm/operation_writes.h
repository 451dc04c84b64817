// The one place that plans the document writes of starting, cancelling and ending operations. Pure
// functions from documents as read to store write operations; the caller reads, decides and commits
// (the frontend when a DELETE starts, the backend when it ends an operation or deletes the resources
// of a deleted subscription). See docs/architecture.md ("Operation writes").
//
// Every write that changes an operation is conditioned on the status it was read with (a terminal
// operation never changes); every write that changes a resource is conditioned on what it was read
// with (its activeOperationId, or its etag when the caller has one), so a plan built from stale reads
// fails the batch instead of overwriting a newer state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arm/documents.h"
#include "core/clock.h"
#include "core/json.h"
#include "store/store.h"

namespace hcprp::arm {

// A new operation document (a fresh UUIDv4 id, started `now`, status Deleting for a Delete and
// Accepted otherwise), not yet exposed to any caller.
OperationDocument NewOperation(OperationRequest request, std::string external_id, std::string internal_id,
                               std::string location, TimePoint now);

// Appends the patch that cancels the non-terminal operation `op` (status Canceled, the superseded
// error, lastTransitionTime `now`) and, when ARM gave a notification URI, the pending notification
// record (see kPendingNotificationDocType) the backend owes. Returns the patch's index in `writes`.
size_t PlanCancel(const OperationDocument& op, TimePoint now, std::vector<store::WriteOp>* writes);

// Appends the pending notification record of operation `op_id` when `uri` is not empty.
void PlanPendingNotification(std::string_view op_id, std::string_view uri,
                             std::vector<store::WriteOp>* writes);

// The resource a delete starts on, as read.
struct ResourceAsRead {
  std::string doc_id;
  std::optional<std::string> etag;  // when set, every write to it is if_match(etag)
  // When set, every write to it is conditioned on its activeOperationId as read (see Unchanged()).
  std::optional<store::Condition> active_operation;
};

struct StartDeletePlan {
  std::vector<store::WriteOp> writes;
  size_t created_index = 0;              // the new Delete operation's create
  std::optional<size_t> canceled_index;  // the superseded operation's patch
};

// Starting a resource's delete: cancels `active` (the resource's non-terminal operation, when it has
// one), creates `op` (a Delete operation in state Deleting) with `ttl_seconds`, and marks the resource
// Deleting with activeOperationId = op.id.
StartDeletePlan PlanStartDelete(const ResourceAsRead& resource, const OperationDocument& op,
                                int64_t ttl_seconds, const OperationDocument* active, TimePoint now);

// A change of an operation's status (with the error of a Failed or Canceled one).
struct StatusChange {
  std::string status;
  std::optional<OperationError> error;
};

// Appends the patch that moves `op` (read with status `op.status`) to `change` at `now`, and, when
// the change is terminal and ARM gave a notification URI, the pending notification record. Returns
// the patch's index in `writes`.
size_t PlanStatusChange(const OperationDocument& op, const StatusChange& change, TimePoint now,
                        std::vector<store::WriteOp>* writes);

// Appends the patch of the resource whose activeOperationId names the operation that changes: its
// provisioningState follows the operation of a PUT, PATCH or DELETE, and a terminal change clears
// activeOperationId. Nothing when neither applies.
void PlanResourceFollows(const ResourceAsRead& resource, OperationRequest request, const StatusChange& change,
                         std::vector<store::WriteOp>* writes);

// Appends the end of the non-terminal operation `op` of a child resource that is deleted with its
// parent: a Delete operation Succeeded, any other Canceled. Returns the patch's index.
size_t PlanEndWithParent(const OperationDocument& op, TimePoint now, std::vector<store::WriteOp>* writes);

// Billing. The billing records live in their own container of the subscription's partition; these
// writes name it (WriteOp::In) and commit in the batch that ends the operation, so an operation's end
// and its billing are one durable commit.

// The billing record of a resource whose create Succeeded (document id = the resource's).
store::WriteOp PlanBillingCreation(const ResourceDocument& resource, std::string_view doc_id,
                                   std::string_view subscription_pk, TimePoint now);
// The deletion time of a billed resource that was deleted, on the billing record read with `etag`.
store::WriteOp PlanBillingDeletion(std::string_view doc_id, std::string_view etag, TimePoint now);

// A store condition that the value at `path` of `body` is unchanged (absent stays absent).
store::Condition Unchanged(const json::value& body, std::string_view path);
// Store patch operations.
store::PatchOp SetAt(std::string_view path, json::value v);
store::PatchOp RemoveAt(std::string_view path);

}  // namespace hcprp::arm
