#include "backend/operation_writer.h"

#include "arm/operation_writes.h"
#include "backend/update_recovery.h"

namespace hcprp::backend {

namespace {

constexpr int kMaxWriteAttempts = 4;
constexpr size_t kQueryPage = 1000;

arm::StatusChange ToStatusChange(const Transition& t) { return arm::StatusChange{t.status, t.error}; }

ReadResource ToReadResource(const store::Document& d, arm::ResourceDocument doc) {
  return ReadResource{d.id, d.etag, arm::Unchanged(d.body, arm::kPathActiveOperationId), std::move(doc),
                      arm::Unchanged(d.body, arm::kPathServiceStatus)};
}

}  // namespace

void OperationWriter::CountRefusal(const Error& e, const store::Lease& fence) {
  if (e.IsPreconditionFailed() && !store::FailedBatchIndex(e)) {
    ownership_->FenceRefused(fence);
    ++counters_->fence_refusals;
  } else {
    ++counters_->write_conflicts;
  }
}

Result<TransitionInput> OperationWriter::ReadTransitionInput(std::string_view pk,
                                                             const arm::OperationDocument& op,
                                                             arm::StatusChange change) {
  TransitionInput in;
  in.partition_key = std::string(pk);
  in.operation = op;
  in.change = std::move(change);
  in.now = clock_->Now();
  HCPRP_ASSIGN_OR_RETURN(std::optional<store::Document> found, FindResource(*store_, pk, op.external_id));
  if (!found) return in;
  auto doc = arm::ResourceDocument::FromBody(found->body);
  if (!doc.ok() || doc->active_operation_id != op.id) return in;  // superseded: the operation changes alone
  in.resource = ToReadResource(*found, std::move(doc).value());
  if (!(arm::IsTerminalState(in.change.status) && DeletesResource(op, in.change))) return in;
  // Children go with their parent; their operations end with it.
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = std::string(pk);
  q.resource_id_prefix = in.resource->doc.resource_id + "/";
  q.max_items = kQueryPage;
  while (true) {
    HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, store_->Query(q));
    for (store::Document& child : page.documents) {
      auto child_doc = arm::ResourceDocument::FromBody(child.body);
      if (!child_doc.ok()) continue;
      ReadChild read{ToReadResource(child, std::move(child_doc).value()), std::nullopt};
      if (read.resource.doc.active_operation_id) {
        auto cop = store_->Read(store::kResources, pk, *read.resource.doc.active_operation_id);
        if (cop.ok()) {
          auto parsed = arm::OperationDocument::FromBody(cop->id, cop->body);
          if (parsed.ok() && !arm::IsTerminalState(parsed->status))
            read.active_operation = std::move(parsed).value();
        }
      }
      in.children.push_back(std::move(read));
    }
    if (page.continuation.empty()) break;
    q.continuation = page.continuation;
  }
  return in;
}

Outcome OperationWriter::Transit(std::string_view pk, std::string_view op_id, const Decider& decide,
                                 const SeenConditions* seen, bool* conditions_committed) {
  if (conditions_committed != nullptr) *conditions_committed = false;
  MutexLock lock(ApplyMutex(pk));
  for (int attempt = 0; attempt < kMaxWriteAttempts; ++attempt) {
    auto fence = ownership_->FenceFor(pk);
    if (!fence) return Outcome::kNotOwner;
    auto doc = store_->Read(store::kResources, pk, op_id);
    if (!doc.ok()) {
      if (doc.error().IsNotFound()) {
        index_->Remove(pk, op_id);
        memo_->ForgetFound(pk, op_id);
        return Outcome::kGone;
      }
      ++counters_->errors;
      return Outcome::kError;
    }
    auto op = ParseOperation(*doc);
    auto typed = arm::OperationDocument::FromBody(doc->id, doc->body);
    if (!op || !typed.ok() || arm::IsTerminalState(op->status)) {
      index_->Remove(pk, op_id);
      memo_->ForgetFound(pk, op_id);
      return Outcome::kNoChange;
    }
    std::optional<Transition> t = decide(*op);
    if (!t || t->status == op->status) return Outcome::kNoChange;

    auto in = ReadTransitionInput(pk, *typed, ToStatusChange(*t));
    if (!in.ok()) {
      ++counters_->errors;
      return Outcome::kError;
    }
    // A create's object found before anything recorded it is recorded with this transition.
    if (op->internal_id.empty() && op->request == Request::kCreate) in->found = memo_->FoundFor(pk, op_id);
    if (seen != nullptr && in->resource) {
      const std::string& href = in->resource->doc.internal_id.empty() && in->found
                                    ? in->found->href
                                    : in->resource->doc.internal_id;
      if (href == seen->href) in->conditions = seen->fields;
    }
    TransitionPlan plan = PlanTransition(*in);
    if (plan.terminal) {  // the billing records commit with the operation's end: one durable commit
      if (Status s = AppendBilling(pk, &plan); !s.ok()) {
        ++counters_->errors;
        logger_->Warn("billing record not read",
                      {{"operation", std::string(op_id)}, {"error", s.error().ToString()}});
        return Outcome::kError;
      }
    }
    auto r = store_->Batch(store::kResources, pk, plan.writes, &*fence);
    if (!r.ok()) {
      const Error& e = r.error();
      if (e.IsPreconditionFailed() && !store::FailedBatchIndex(e)) {
        ownership_->FenceRefused(*fence);
        ++counters_->fence_refusals;
        logger_->Warn("write refused: stale fence", {{"operation", std::string(op_id)}});
        return Outcome::kNotOwner;
      }
      if (e.IsPreconditionFailed() || e.IsNotFound()) {
        ++counters_->write_conflicts;
        continue;  // something changed meanwhile: read again
      }
      ++counters_->errors;
      logger_->Warn("operation write failed", {{"operation", std::string(op_id)}, {"error", e.ToString()}});
      return Outcome::kError;
    }

    ++counters_->transitions;
    if (in->found) memo_->ForgetFound(pk, op_id);
    if (conditions_committed != nullptr)
      *conditions_committed = plan.conditions || in->conditions.has_value();
    if (!plan.terminal) {
      op->status = t->status;
      index_->Upsert(*op);
      return Outcome::kApplied;
    }
    ++counters_->terminal;
    std::vector<store::Document> ended_docs;
    for (size_t i : plan.ended) {
      if (i < r->documents.size()) ended_docs.push_back(r->documents[i]);
    }
    AfterTerminal(ended_docs, plan);
    return Outcome::kApplied;
  }
  return Outcome::kError;
}

void OperationWriter::AfterTerminal(const std::vector<store::Document>& ended_operations,
                                    const TransitionPlan& plan) {
  for (const store::Document& d : ended_operations) {
    index_->Remove(d.partition_key, d.id);
    memo_->ForgetEnded(d.partition_key, d.id);  // a child's create ended with its parent before its record
    auto ended = ParseOperation(d);
    if (ended && !ended->notification_uri.empty()) {
      notifications_->Enqueue(ended->notification_uri, OperationStatusResource(d), d.partition_key,
                              arm::PendingNotificationId(d.id));
      hooks_.notify();
    }
  }
  counters_->resources_deleted += plan.deleted.size();
}

Status OperationWriter::AppendBilling(std::string_view pk, TransitionPlan* plan) {
  for (store::WriteOp& w : plan->billing) plan->writes.push_back(std::move(w));
  plan->billing.clear();
  const TimePoint now = clock_->Now();
  for (const std::string& id : plan->deleted) {
    auto existing = store_->Read(store::kBilling, pk, id);
    if (!existing.ok()) {
      if (existing.error().IsNotFound()) continue;  // never billed
      return existing.error();
    }
    plan->writes.push_back(arm::PlanBillingDeletion(id, existing->etag, now));
  }
  return Status::Ok();
}

void OperationWriter::EnsureDeleteOperation(const store::Document& resource) {
  const std::string& pk = resource.partition_key;
  auto doc = arm::ResourceDocument::FromBody(resource.body);
  if (!doc.ok()) return;
  std::optional<arm::OperationDocument> active;
  if (doc->active_operation_id) {
    auto d = store_->Read(store::kResources, pk, *doc->active_operation_id);
    if (d.ok()) {
      auto parsed = arm::OperationDocument::FromBody(d->id, d->body);
      if (parsed.ok() && !arm::IsTerminalState(parsed->status)) active = std::move(parsed).value();
      if (active && active->request == arm::OperationRequest::kDelete) {
        if (auto record = ParseOperation(*d); record && index_->Upsert(*record)) hooks_.check(*record);
        return;
      }
    }
  }
  MutexLock lock(ApplyMutex(pk));
  auto fence = ownership_->FenceFor(pk);
  if (!fence) return;
  const TimePoint now = clock_->Now();
  arm::OperationDocument op =
      arm::NewOperation(Request::kDelete, doc->resource_id, doc->internal_id, doc->location, now);
  arm::ResourceAsRead read{resource.id, std::nullopt,
                           arm::Unchanged(resource.body, arm::kPathActiveOperationId)};
  arm::StartDeletePlan plan =
      arm::PlanStartDelete(read, op, options_->operation_ttl_seconds, active ? &*active : nullptr, now);
  auto r = store_->Batch(store::kResources, pk, std::move(plan.writes), &*fence);
  if (!r.ok()) {
    CountRefusal(r.error(), *fence);  // the next sweep looks again
    return;
  }
  ++counters_->implicit_deletes;
  if (plan.canceled_index) {
    const store::Document& canceled = r->documents[*plan.canceled_index];
    index_->Remove(pk, canceled.id);
    auto ended = ParseOperation(canceled);
    if (ended && !ended->notification_uri.empty()) {
      notifications_->Enqueue(ended->notification_uri, OperationStatusResource(canceled), pk,
                              arm::PendingNotificationId(canceled.id));
    }
  }
  if (auto created = ParseOperation(r->documents[plan.created_index])) {
    index_->Upsert(*created);
    hooks_.check(*created);
  }
}

bool OperationWriter::RecordObject(const OperationRecord& op, const store::Document& res,
                                   const arm::ResourceDocument& doc, const std::string& href,
                                   json::object observed) {
  MutexLock lock(ApplyMutex(op.partition_key));
  auto fence = ownership_->FenceFor(op.partition_key);
  if (!fence) return false;
  auto current = store_->Read(store::kResources, op.partition_key, op.id);
  if (!current.ok()) return false;
  auto cur = ParseOperation(*current);
  if (!cur || arm::IsTerminalState(cur->status)) {
    index_->Remove(op.partition_key, op.id);
    return false;
  }
  std::vector<store::WriteOp> ops;
  ops.push_back(store::WriteOp::Patch(op.id, {arm::SetAt(arm::kPathInternalId, json::value(href))},
                                      {arm::Unchanged(current->body, arm::kPathStatus),
                                       arm::Unchanged(current->body, arm::kPathInternalId)}));
  if (doc.active_operation_id == op.id && doc.internal_id.empty()) {
    std::vector<store::PatchOp> set = {arm::SetAt(arm::kPathInternalId, json::value(href))};
    const json::value* recorded = FindPointer(res.body, arm::kPathObserved);
    if (!observed.empty() &&
        (recorded == nullptr || (recorded->is_object() && recorded->as_object().empty()))) {
      set.push_back(arm::SetAt(arm::kPathObserved, json::value(std::move(observed))));
    }
    ops.push_back(store::WriteOp::Patch(res.id, std::move(set),
                                        {arm::Unchanged(res.body, arm::kPathActiveOperationId),
                                         arm::Unchanged(res.body, arm::kPathInternalId)}));
  }
  return CommitOperationBatch(op.partition_key, std::move(ops), *fence);
}

bool OperationWriter::ConfirmUpdate(const OperationRecord& op) {
  MutexLock lock(ApplyMutex(op.partition_key));
  auto fence = ownership_->FenceFor(op.partition_key);
  if (!fence) return false;
  auto current = store_->Read(store::kResources, op.partition_key, op.id);
  if (!current.ok()) return false;
  auto cur = ParseOperation(*current);
  if (!cur || arm::IsTerminalState(cur->status) || !cur->awaiting_cluster_service) return false;
  auto resource = FindResource(*store_, op.partition_key, op.external_id);
  if (!resource.ok()) return false;
  return CommitOperationBatch(op.partition_key, PlanUpdateConfirmation(*current, *resource), *fence);
}

bool OperationWriter::CommitOperationBatch(const std::string& partition_key, std::vector<store::WriteOp> ops,
                                           const store::Lease& fence) {
  auto r = store_->Batch(store::kResources, partition_key, std::move(ops), &fence);
  if (!r.ok()) {
    CountRefusal(r.error(), fence);
    return false;
  }
  if (auto written = ParseOperation(r->documents[0])) {
    index_->Upsert(*written);
    hooks_.check(*written);
  }
  return true;
}

}  // namespace hcprp::backend
