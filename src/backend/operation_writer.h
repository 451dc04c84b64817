// The backend's writes to operations and resources (private to src/backend): one status change of an
// operation (read, plan with PlanTransition, commit in one fenced batch, then index, notifications and
// billing), the record of a create's Cluster Service object, and the implicit Delete operations of
// deleted subscriptions. Writes to one partition run one at a time; different partitions' may run at
// once. Thread-safe.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/counters.h"
#include "backend/documents.h"
#include "backend/notifier.h"
#include "backend/object_memo.h"
#include "backend/operation_index.h"
#include "backend/ownership.h"
#include "backend/state_mapping.h"
#include "backend/transition_planner.h"
#include "core/mutex.h"

namespace hcprp::backend {

enum class Outcome { kApplied, kNoChange, kGone, kNotOwner, kError };

// Decides an operation's transition from its current record; nullopt for none.
using Decider = std::function<std::optional<Transition>(const OperationRecord&)>;

// The synced status fields (clusterservice::SyncedStatusFields: conditions, version history) of the
// object `href`, seen with the status that decides a transition.
struct SeenConditions {
  std::string href;
  json::object fields;
};

class OperationWriter {
 public:
  // What the writer asks of the rest of the backend after a write: check an operation (a Delete it
  // started, a create whose object it recorded); deliver the notifications it queued.
  struct Hooks {
    std::function<void(const OperationRecord&)> check;
    std::function<void()> notify;
  };
  // Not owned; all must outlive this.
  OperationWriter(const BackendOptions* options, store::Store* store, Ownership* ownership,
                  const Clock* clock, const Logger* logger, OperationIndex* index, ObjectMemo* memo,
                  NotificationQueue* notifications, Counters* counters, Hooks hooks)
      : options_(options),
        store_(store),
        ownership_(ownership),
        clock_(clock),
        logger_(logger),
        index_(index),
        memo_(memo),
        notifications_(notifications),
        counters_(counters),
        hooks_(std::move(hooks)) {}

  // Moves an operation to decide(current record)'s transition in one fenced batch (backend.h). With
  // `seen`, the conditions go into the operation's resource in the transition's batch when the
  // resource is the object's and kept (see TransitionInput::conditions); *conditions_committed tells
  // whether they were committed (or found stored already) with it.
  Outcome Transit(std::string_view pk, std::string_view op_id, const Decider& decide,
                  const SeenConditions* seen = nullptr, bool* conditions_committed = nullptr);
  // Records `href` (and what the Cluster Service assigned, where the resource holds nothing) on a
  // create's operation and resource in one fenced batch. False when not written.
  bool RecordObject(const OperationRecord& op, const store::Document& res, const arm::ResourceDocument& doc,
                    const std::string& href, json::object observed);
  // Removes an unconfirmed update's awaitingClusterService mark in one fenced batch
  // (PlanUpdateConfirmation, update_recovery.h), then queues the operation's check. False when not
  // written (the operation ended, was confirmed meanwhile, or the write failed).
  bool ConfirmUpdate(const OperationRecord& op);
  // A resource of a deleted subscription: gives it a Delete operation unless it has one.
  void EnsureDeleteOperation(const store::Document& resource);

 private:
  // Reads what PlanTransition needs for `op` changing to `change`; kError on a store failure.
  Result<TransitionInput> ReadTransitionInput(std::string_view pk, const arm::OperationDocument& op,
                                              arm::StatusChange change);
  // Moves the plan's billing record into its writes and adds the deletion time of every deleted
  // resource that was billed (read for its ETag); a store failure other than not-found is returned.
  Status AppendBilling(std::string_view pk, TransitionPlan* plan);
  // Index and notifications after a batch ended operations.
  void AfterTerminal(const std::vector<store::Document>& ended_operations, const TransitionPlan& plan);
  // Counts a refused batch: a stale fence (told to the ownership) or a conflicting write.
  void CountRefusal(const Error& e, const store::Lease& fence);
  // Commits `ops`, whose first write is an operation document, under `fence`; indexes and checks the
  // operation as written. False (the refusal counted) when the store refused it.
  bool CommitOperationBatch(const std::string& partition_key, std::vector<store::WriteOp> ops,
                            const store::Lease& fence);

  Mutex& ApplyMutex(std::string_view pk) {
    return apply_mu_[std::hash<std::string_view>{}(pk) % apply_mu_.size()];
  }

  // Constant after construction.
  const BackendOptions* const options_;
  store::Store* const store_;
  Ownership* const ownership_;
  const Clock* const clock_;
  const Logger* const logger_;
  OperationIndex* const index_;
  ObjectMemo* const memo_;
  NotificationQueue* const notifications_;
  Counters* const counters_;
  const Hooks hooks_;

  std::array<Mutex, 32> apply_mu_;
};

}  // namespace hcprp::backend
