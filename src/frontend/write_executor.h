// The one place that carries out the frontend's write plans (write_plan.h): it commits a plan's
// first batch, makes its Cluster Service request, runs its undo when the Cluster Service refuses and
// commits what follows an accepted request; and a DELETE, whose writes arm/operation_writes.h plans
// (StartDelete), with its Cluster Service request. The order is the write-ahead order of
// docs/architecture.md ("A create, end to end", "An update, end to end"): nothing is asked of the
// Cluster Service before the operation that names the request is durable.
#pragma once

#include <optional>
#include <string_view>
#include <variant>

#include "arm/cloud_error.h"
#include "core/json.h"
#include "core/result.h"
#include "frontend/internal.h"
#include "frontend/write_plan.h"

namespace hcprp::frontend {

// The plan's first batch lost to a concurrent write (the resource exists, or changed since it was
// read): nothing of the plan was written, and the request is decided again from a fresh read.
struct LostRace {};

// A plan carried out: the request is accepted.
struct Committed {
  LoadedResource resource;  // the resource document as the plan left it in the store
  // A create's: the values the Cluster Service's answer showed it assigned (nothing when it did not
  // answer and the backend repeats the create).
  std::optional<json::object> assigned;
};

// A refusal the client sees as it is (arm::CloudError), or a failure the caller maps with
// arm::FromError (Error).
using CommitResult = std::variant<Committed, LostRace, arm::CloudError, Error>;

// Carries out a create. The batch failing because the document exists, or because a child's cluster
// changed since it was read (a DELETE may have started) or is gone (a DELETE finished), is a LostRace. A
// Cluster Service refusal (400 or 409) removes both documents (a failed removal is logged) and answers 400
// InvalidRequestContent or 409 Conflict with the Cluster Service's message. Any other Cluster Service
// failure leaves the create to the backend, which repeats it with the same idempotency key: the
// create is still accepted. Consumes plan.writes, plan.doc and plan.call; plan.resource and plan.op
// stay for the answer.
CommitResult CommitCreate(Env& env, std::string_view request_id, CreatePlan& plan);

// Carries out an update. The batch failing on its etag or an existing operation is a LostRace. Any
// Cluster Service failure is a refusal: the previous document comes back and the operation goes; if
// the document moved on meanwhile (a DELETE superseded the update) the answer is 409, else 400
// InvalidRequestContent for an invalid change or the Cluster Service's error. Once accepted, the
// operation is confirmed (a failed confirmation is logged: the backend then confirms the operation
// from the Cluster Service object, src/backend/update_recovery.h) and the values the answer shows that the
// document lacks are recorded while the document is still the version written. Consumes plan.writes, plan.doc
// and plan.call; plan.op stays for the answer.
CommitResult CommitUpdate(Env& env, std::string_view request_id, UpdatePlan& plan);

// Carries out a DELETE of `resource`: StartDelete's batches (its children first, the operation
// exposed to `ctx`'s caller), then the delete of its Cluster Service object when it has one. A failed
// Cluster Service delete is logged and left to the backend, which repeats it for the durable Delete
// operation. Returns the Delete operation; a store error of StartDelete as it is.
Result<arm::OperationDocument> CommitDelete(Env& env, const RequestContext& ctx,
                                            const LoadedResource& resource);

}  // namespace hcprp::frontend
