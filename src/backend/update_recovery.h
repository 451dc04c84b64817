// The recovery of an update its frontend recorded and did not confirm (private to src/backend).
//
// The frontend commits the intent first (the resource document with the new values and an Update
// operation marked awaitingClusterService), then PATCHes the Cluster Service object, then removes the
// mark (docs/architecture.md, "An update, end to end"). A frontend that stops in between, or a store
// that fails under the confirmation, leaves the mark, and the resource answers 409 to every write
// until the operation ends. The backend resolves such an update from what the Cluster Service holds,
// without giving up the write-ahead order (nothing reaches the Cluster Service that is not durable
// in the store first):
//   - the object holds the update (clusterservice::ObjectHoldsUpdate): the request was applied, or
//     changes nothing; the mark goes and the object's state judges the operation from then on;
//   - it does not, and the frontend is taken for gone (the record is older than
//     update_recovery_grace): the backend sends the recorded update itself (the same patch:
//     clusterservice::UpdateRequestFor) and removes the mark once the Cluster Service took it; a
//     Cluster Service that refuses it (400) ends the operation Failed with its reason; a busy one
//     (409) or a failure is tried again on the next timer step;
//   - otherwise it waits: its frontend may still be on its way.
// A frontend still at work when the backend acts sends the same patch, so either order leaves the
// object with the recorded values; the confirmation also writes the resource document, so such a
// frontend can no longer put the previous version back over an update that goes ahead.
#pragma once

#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/counters.h"
#include "backend/documents.h"
#include "backend/operation_writer.h"
#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::backend {

// What a read of the update's Cluster Service object showed.
enum class UpdateSeen {
  kNotRead,  // not read yet, or the read failed
  kHeld,     // the object holds the recorded update
  kNotHeld,  // it does not
  kGone,     // there is no object (the ordinary check then ends the operation)
};

enum class UnconfirmedStep {
  kWait,     // too early, or nothing known: look again on the next timer step
  kConfirm,  // remove the mark; the object's state judges the operation from then on
  kSend,     // send the recorded update to the Cluster Service
  kFail,     // the Cluster Service refused the update: the operation ends Failed
};

// Pure. Whether the object should be read for an unconfirmed update `age` old (since its startTime).
bool ShouldReadUnconfirmed(Duration age, const BackendOptions& options);
// Pure. The step for an unconfirmed update `age` old whose object was seen as `seen`.
UnconfirmedStep DecideUnconfirmed(Duration age, UpdateSeen seen, const BackendOptions& options);
// Pure. The step after the backend sent the update and the Cluster Service answered `answer`.
UnconfirmedStep AfterSent(const Result<json::object>& answer);

// Pure. The fenced batch of the confirmation: the operation (`op`, as read) loses its mark while its
// status is the one read; the resource (`resource`, as read) is written again while it names the
// operation, so that its ETag changes (a frontend's undo, conditioned on the ETag it wrote, then
// fails). Without `resource`, or when it names another operation, the operation alone.
std::vector<store::WriteOp> PlanUpdateConfirmation(const store::Document& op,
                                                   const std::optional<store::Document>& resource);

// Resolves unconfirmed updates against the store and the Cluster Service. Thread-safe; operations of
// one partition are resolved one at a time by the caller (StatusChecks).
class UnconfirmedUpdates {
 public:
  // Not owned; all must outlive this.
  UnconfirmedUpdates(const BackendOptions* options, store::Store* store, clusterservice::Client* cs,
                     const Clock* clock, const Logger* logger, OperationWriter* writer, Counters* counters)
      : options_(options),
        store_(store),
        cs_(cs),
        clock_(clock),
        logger_(logger),
        writer_(writer),
        counters_(counters) {}

  // Takes the step DecideUnconfirmed gives for `op` (awaiting the Cluster Service) now. A confirmed
  // operation is queued for its ordinary check (OperationWriter's hooks); one still awaiting is
  // looked at again on the next timer step.
  void Resolve(const OperationRecord& op);

 private:
  // Whether the resource's object holds `patch`, the update recorded on `doc`.
  UpdateSeen Read(const arm::ResourceDocument& doc, const json::object& patch);
  void Fail(const OperationRecord& op, const Error& refusal);

  // Constant after construction.
  const BackendOptions* const options_;
  store::Store* const store_;
  clusterservice::Client* const cs_;
  const Clock* const clock_;
  const Logger* const logger_;
  OperationWriter* const writer_;
  Counters* const counters_;
};

}  // namespace hcprp::backend
