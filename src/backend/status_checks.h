// The backend's status checks (private to src/backend): the queue of operations to check, reading
// what the Cluster Service says of an operation's object, deadlines, finding the object a create made,
// and the recovery of creates whose frontend stopped midway. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backend/check_queue.h"
#include "backend/condition_sync.h"
#include "backend/counters.h"
#include "backend/documents.h"
#include "backend/object_memo.h"
#include "backend/operation_index.h"
#include "backend/operation_writer.h"
#include "backend/ownership.h"
#include "backend/state_mapping.h"
#include "backend/update_recovery.h"
#include "clusterservice/client.h"
#include "clusterservice/mapping.h"

namespace hcprp::backend {

class StatusChecks {
 public:
  // How a drain of the check queue ended.
  enum class Drained {
    kEmptied,      // nothing left
    kBudgetSpent,  // max_checks started: the rest is due at once, after the step's other work
    kStalled,      // a check must wait (store failure, Cluster Service delete budget): next tick
  };

  // Not owned; all must outlive this. `wake` is called when a check is queued.
  StatusChecks(const BackendOptions* options, store::Store* store, clusterservice::Client* cs,
               Ownership* ownership, const Clock* clock, const Logger* logger, OperationIndex* index,
               ObjectMemo* memo, OperationWriter* writer, ConditionSync* conditions, Counters* counters,
               std::function<void()> wake)
      : options_(options),
        store_(store),
        cs_(cs),
        ownership_(ownership),
        clock_(clock),
        logger_(logger),
        index_(index),
        memo_(memo),
        writer_(writer),
        conditions_(conditions),
        counters_(counters),
        wake_(std::move(wake)),
        unconfirmed_(options, store, cs, clock, logger, writer, counters) {}

  // Queues a check of `op` (once).
  void Enqueue(const OperationRecord& op);
  size_t Queued() const { return queue_.Size(); }
  // Runs queued checks, several at once, until the queue is empty, max_checks started or a check
  // stalls. `events_available`: the event stream works (a create's object is then found by events
  // for a while before a check searches for it).
  Drained Drain(size_t max_checks, std::atomic<size_t>* cs_delete_budget, bool events_available);
  // Whether the event stream alone drives `op` while it is available: not a credential operation,
  // the object known, the Cluster Service delete issued. The others are polled.
  bool EventsCover(const OperationRecord& op) const;
  // Queues a check of every update whose frontend has not confirmed its Cluster Service request
  // (update_recovery.h resolves them; each timer step looks again until it did).
  void EnqueueUnconfirmed();
  // Fails the operations whose deadline passed.
  void ApplyDeadlines();
  // An event for an object no operation knows: when a create waits for it (ObjectFor), remembers it
  // for that create (RememberFound) and returns true; else keeps a recently made object for a while
  // (ClaimUnclaimed).
  bool FindCreateOfEvent(const clusterservice::Event& event);
  // Records the object found for `op` (RememberFound) when no status change did: at once, so that the
  // resource shows what the Cluster Service assigned while the object is still pending.
  void RecordFound(const OperationRecord& op);

 private:
  // How reading an object's status ended.
  enum class Read { kRead, kFailed, kStalled };

  // Returns false when it needs a CS delete but the budget is spent (re-queue it).
  bool Check(const OperationRecord& op, std::atomic<size_t>* cs_delete_budget, bool events_available);
  // The href of the object `op` acts on; empty when the check ends without reading one (it found
  // nothing yet, recovered a create, failed, or ended the operation).
  std::string ObjectOf(const OperationRecord& op, TimePoint now, bool events_available);
  // What the Cluster Service says of `href` for `op`; for a Delete, issues the Cluster Service delete
  // when nothing did (kStalled when the budget is spent).
  Read Observe(const OperationRecord& op, const std::string& href, std::atomic<size_t>* cs_delete_budget,
               Observation* obs, std::optional<SeenConditions>* seen);
  Read ObserveCredential(const std::string& href, Observation* obs);
  Read ObserveRevocation(const std::string& href, Observation* obs);
  Read IssueDelete(const OperationRecord& op, const std::string& href, std::atomic<size_t>* cs_delete_budget,
                   Observation* obs);
  void RecoverCreate(const OperationRecord& op);
  // The object a create made that nothing recorded yet, searched by the ARM names it carries; one
  // made before the operation started, or being deleted, is not this create's. nullopt when there is
  // none yet (the frontend's request may still be on its way) or the search failed.
  std::optional<FoundObject> FindCreatedObject(const OperationRecord& op);
  // Indexes `op` under the found object's href (its events then find it) and keeps the object until
  // it is recorded: with a status change decided at once (Transit), else on its own (RecordFound).
  void RememberFound(OperationRecord op, FoundObject found);
  // The object (listed, or from an event) when it is the one `op`'s create made: the resource's names
  // (a child's under its cluster's object), not being deleted, not made before the operation started.
  std::optional<FoundObject> ObjectFor(const OperationRecord& op,
                                       const clusterservice::ServiceObject& object);
  // A recently made object whose event came before `op` was indexed (FindCreateOfEvent kept it).
  std::optional<FoundObject> ClaimUnclaimed(const OperationRecord& op);
  // The Cluster Service create request of `doc` (clusterservice/mapping.h) with its parent's internal
  // ID and the subscription's tenant, as the frontend sent it.
  Result<clusterservice::CreateRequest> RecoveryRequest(const OperationRecord& op,
                                                        const arm::ResourceDocument& doc);
  // The href of the Cluster Service object made for `resource_id` whose internal ID was never recorded
  // (searched by the ARM names it carries); empty when there is none.
  Result<std::string> FindUnrecordedObject(std::string_view pk, std::string_view resource_id);
  // The Cluster Service objects named like `resource_id` (under its cluster's object for a child).
  Result<json::array> ObjectsNamed(std::string_view pk, std::string_view resource_id);
  std::optional<Duration> DeadlineOf(Request request) const;

  // Constant after construction.
  const BackendOptions* const options_;
  store::Store* const store_;
  clusterservice::Client* const cs_;
  Ownership* const ownership_;
  const Clock* const clock_;
  const Logger* const logger_;
  OperationIndex* const index_;
  ObjectMemo* const memo_;
  OperationWriter* const writer_;
  ConditionSync* const conditions_;
  Counters* const counters_;
  const std::function<void()> wake_;

  CheckQueue queue_;
  UnconfirmedUpdates unconfirmed_;
};

}  // namespace hcprp::backend
