#include "backend/status_checks.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "arm/operation_writes.h"
#include "arm/resource_id.h"
#include "core/time.h"

namespace hcprp::backend {

namespace {

// Clocks of different machines: an object stamped this much before its operation started may still be
// the one its create made.
constexpr Duration kClockSkew = std::chrono::seconds(30);
// With the Cluster Service's event stream, a create's object is found by its events (ApplyEvent);
// the check searches for it only once the operation is this old (events lost, or none).
constexpr Duration kFoundByEventsWithin = std::chrono::seconds(5);

// Whether `object` (listed, or from an event) can be the one a create made: not being deleted, and
// not made before the operation started (an older object of the same name is another resource's).
bool MadeFor(const OperationRecord& op, const clusterservice::ServiceObject& object) {
  if (object.status.state == "uninstalling") return false;
  return !(op.start_time && object.created && *object.created + kClockSkew < *op.start_time);
}

ObjectKind KindOf(arm::ResourceKind kind) {
  switch (kind) {
    case arm::ResourceKind::kCluster:
      return ObjectKind::kCluster;
    case arm::ResourceKind::kNodePool:
      return ObjectKind::kNodePool;
    case arm::ResourceKind::kExternalAuth:
      return ObjectKind::kExternalAuth;
  }
  return ObjectKind::kCluster;
}

std::string DescribeDuration(Duration d) {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(d).count();
  if (minutes % 60 == 0 && minutes >= 120) return std::to_string(minutes / 60) + " hours";
  if (minutes > 0) return std::to_string(minutes) + " minutes";
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " seconds";
}

}  // namespace

void StatusChecks::Enqueue(const OperationRecord& op) {
  if (queue_.Push({op.partition_key, op.id})) wake_();
}

bool StatusChecks::EventsCover(const OperationRecord& op) const {
  if (op.request == Request::kRequestCredential || op.request == Request::kRevokeCredentials ||
      op.internal_id.empty())
    return false;
  if (op.request != Request::kDelete) return true;
  return memo_->DeleteIssued(op.partition_key, op.id);
}

StatusChecks::Drained StatusChecks::Drain(size_t max_checks, std::atomic<size_t>* cs_delete_budget,
                                          bool events_available) {
  // Checks wait on the Cluster Service and on durable commits: several run at once (operations of
  // one partition never do, see ApplyMutex()).
  std::atomic<size_t> started{0};
  std::atomic<bool> stopped{false};  // budget spent, queue empty or a check stalled
  std::atomic<bool> emptied{false};
  std::atomic<bool> stalled{false};
  auto work = [&] {
    while (!stopped) {
      if (started.fetch_add(1) >= max_checks) {
        stopped = true;
        return;
      }
      std::optional<CheckQueue::Key> key = queue_.Pop();
      if (!key) {
        emptied = true;
        stopped = true;
        return;
      }
      auto op = index_->Find(key->first, key->second);
      if (!op) continue;
      ++counters_->checks_running;
      const bool checked = Check(*op, cs_delete_budget, events_available);
      --counters_->checks_running;
      if (!checked) {
        queue_.Push(std::move(*key));
        stalled = true;
        stopped = true;
        return;
      }
    }
  };
  const size_t queued = queue_.Size();
  size_t helpers =
      std::min<size_t>(options_->check_concurrency > 0 ? options_->check_concurrency - 1 : 0, queued / 2);
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stalled) return Drained::kStalled;
  return emptied ? Drained::kEmptied : Drained::kBudgetSpent;
}

std::optional<Duration> StatusChecks::DeadlineOf(Request request) const {
  switch (request) {
    case Request::kCreate:
      return options_->create_deadline;
    case Request::kUpdate:
      return options_->update_deadline;
    case Request::kDelete:
      return options_->delete_deadline;
    case Request::kRequestCredential:
    case Request::kRevokeCredentials:
      return options_->credential_deadline;
  }
  return std::nullopt;
}

void StatusChecks::EnqueueUnconfirmed() {
  for (const OperationRecord& op : index_->Unconfirmed()) Enqueue(op);
}

void StatusChecks::ApplyDeadlines() {
  TimePoint now = clock_->Now();
  for (const OperationRecord& op : index_->All()) {
    // The resource's own deadline (an experimental override) comes before the request's default.
    auto deadline = op.deadline_seconds ? std::optional<Duration>(std::chrono::seconds(*op.deadline_seconds))
                                        : DeadlineOf(op.request);
    if (!deadline || !op.start_time || now < *op.start_time + *deadline) continue;
    Outcome o = writer_->Transit(
        op.partition_key, op.id, [&](const OperationRecord& cur) -> std::optional<Transition> {
          if (!cur.start_time || now < *cur.start_time + *deadline) return std::nullopt;
          return FailedWith("OperationTimedOut",
                            "The " + cur.request_name + " operation did not complete within " +
                                DescribeDuration(*deadline) + " (last status " + cur.status + ")");
        });
    if (o == Outcome::kApplied) {
      ++counters_->deadline_failures;
      logger_->Warn("operation deadline passed", {{"operation", op.id}, {"request", op.request_name}});
    }
  }
}

bool StatusChecks::Check(const OperationRecord& op, std::atomic<size_t>* cs_delete_budget,
                         bool events_available) {
  if (!ownership_->FenceFor(op.partition_key)) return true;
  ++counters_->checks;
  TimePoint now = clock_->Now();
  if (auto deadline = DeadlineOf(op.request);
      deadline && op.start_time && now >= *op.start_time + *deadline) {
    return true;  // ApplyDeadlines ends it
  }
  if (op.awaiting_cluster_service) {
    // The frontend has not confirmed the update's Cluster Service request: the object's state says
    // nothing of the update until it is resolved (and the confirmation queues its check).
    unconfirmed_.Resolve(op);
    return true;
  }
  const std::string href = ObjectOf(op, now, events_available);
  if (href.empty()) return true;

  Observation obs;
  std::optional<SeenConditions> seen;  // the conditions read, committed with the transition if there is one
  switch (Observe(op, href, cs_delete_budget, &obs, &seen)) {
    case Read::kRead:
      break;
    case Read::kFailed:
      return true;
    case Read::kStalled:
      return false;
  }
  ObjectKind kind = KindOfHref(href);
  bool conditions_committed = false;
  Outcome o = writer_->Transit(
      op.partition_key, op.id, [&](const OperationRecord& cur) { return Decide(cur.request, kind, obs); },
      seen ? &*seen : nullptr, &conditions_committed);
  if (o == Outcome::kNoChange) RecordFound(op);  // a found object that no status change recorded
  if (seen && !conditions_committed) conditions_->Sync(op.partition_key, op.external_id, href, seen->fields);
  if (o == Outcome::kGone || (o == Outcome::kNoChange && !index_->Find(op.partition_key, op.id))) {
    memo_->MarkDeleteIssued(op.partition_key, op.id, false);
  }
  return o != Outcome::kError;  // a store failure: requeued, tried again on a later step
}

std::string StatusChecks::ObjectOf(const OperationRecord& op, TimePoint now, bool events_available) {
  if (!op.internal_id.empty()) return op.internal_id;
  if (op.request == Request::kCreate) {
    const bool events_find_it =
        events_available && op.start_time && now - *op.start_time < kFoundByEventsWithin;
    std::optional<FoundObject> found = ClaimUnclaimed(op);
    if (!found && !events_find_it) found = FindCreatedObject(op);
    if (!found) {
      if (op.start_time && now - *op.start_time >= options_->create_recovery_grace) RecoverCreate(op);
      return {};
    }
    std::string href = found->href;
    RememberFound(op, std::move(*found));
    return href;
  }
  auto resource = FindResource(*store_, op.partition_key, op.external_id);
  if (!resource.ok()) {
    ++counters_->errors;
    return {};
  }
  std::string href;
  if (resource->has_value()) href = InternalIdOf((*resource)->body);
  if (href.empty() && op.request == Request::kDelete) {
    // A create whose frontend stopped after the Cluster Service made the object, before the internal
    // ID was recorded, and that was deleted before its recovery: find the object by what it names.
    auto unrecorded = FindUnrecordedObject(op.partition_key, op.external_id);
    if (!unrecorded.ok()) {
      ++counters_->errors;
      return {};
    }
    href = std::move(unrecorded).value();
  }
  if (href.empty()) {
    // Nothing was ever made in the Cluster Service: a Delete is done, anything else cannot be.
    writer_->Transit(op.partition_key, op.id, [&](const OperationRecord& cur) -> std::optional<Transition> {
      if (cur.request == Request::kDelete) return Transition{std::string(arm::kStateSucceeded), std::nullopt};
      return FailedWith("InternalServerError", "The resource has no Cluster Service object");
    });
  }
  return href;
}

StatusChecks::Read StatusChecks::Observe(const OperationRecord& op, const std::string& href,
                                         std::atomic<size_t>* cs_delete_budget, Observation* obs,
                                         std::optional<SeenConditions>* seen) {
  if (op.request == Request::kRequestCredential) return ObserveCredential(href, obs);
  if (op.request == Request::kRevokeCredentials) return ObserveRevocation(href, obs);
  auto read = cs_->GetStatus(href);
  if (read.ok()) {
    clusterservice::CsStatus status = clusterservice::ParseCsStatus(*read);
    *obs = ObservationFrom(status);
    json::object fields = clusterservice::SyncedStatusFields(status);
    if (!fields.empty() && op.request == Request::kDelete) {
      conditions_->Sync(op.partition_key, op.external_id, href, fields);  // before the delete's steps
    } else if (!fields.empty()) {
      *seen = SeenConditions{href, std::move(fields)};  // with the transition, if there is one
    }
  } else if (read.error().IsNotFound()) {
    obs->gone = true;
  } else {
    ++counters_->errors;
    return Read::kFailed;
  }
  if (op.request != Request::kDelete) return Read::kRead;
  if (obs->state == "uninstalling") {
    // The deletion is under way (the frontend issued it): events or polls carry it from here.
    memo_->MarkDeleteIssued(op.partition_key, op.id, true);
    return Read::kRead;
  }
  if (obs->gone || memo_->DeleteIssued(op.partition_key, op.id)) return Read::kRead;
  return IssueDelete(op, href, cs_delete_budget, obs);
}

StatusChecks::Read StatusChecks::ObserveCredential(const std::string& href, Observation* obs) {
  auto cred = cs_->Get(href);
  if (cred.ok()) {
    obs->state = std::string(GetString(*cred, "status").value_or(""));
  } else if (cred.error().IsNotFound()) {
    obs->gone = true;
  } else {
    ++counters_->errors;
    return Read::kFailed;
  }
  return Read::kRead;
}

StatusChecks::Read StatusChecks::ObserveRevocation(const std::string& href, Observation* obs) {
  auto creds = cs_->List(href + "/break_glass_credentials");
  if (creds.ok()) {
    obs->state = std::string(kCredentialsRevoked);
    for (const json::value& item : *creds) {
      const json::object* o = item.if_object();
      if (o == nullptr) continue;
      std::string_view status = GetString(*o, "status").value_or("");
      if (status == "awaiting_revocation" || status == "revoking")
        obs->state = std::string(kCredentialsRevoking);
    }
  } else if (creds.error().IsNotFound()) {
    obs->gone = true;
  } else {
    ++counters_->errors;
    return Read::kFailed;
  }
  return Read::kRead;
}

StatusChecks::Read StatusChecks::IssueDelete(const OperationRecord& op, const std::string& href,
                                             std::atomic<size_t>* cs_delete_budget, Observation* obs) {
  size_t left = cs_delete_budget->load();
  do {
    if (left == 0) return Read::kStalled;
  } while (!cs_delete_budget->compare_exchange_weak(left, left - 1));
  ++counters_->cs_deletes;
  Status d = cs_->Delete(href);
  if (!d.ok() && !d.error().IsNotFound()) {
    ++counters_->errors;
    return Read::kFailed;
  }
  memo_->MarkDeleteIssued(op.partition_key, op.id, true);
  auto after = cs_->GetStatus(href);
  if (after.ok()) {
    *obs = ObservationFrom(clusterservice::ParseCsStatus(*after));
  } else if (after.error().IsNotFound()) {
    *obs = Observation{};
    obs->gone = true;
  } else {
    return Read::kFailed;
  }
  return Read::kRead;
}

Result<json::array> StatusChecks::ObjectsNamed(std::string_view pk, std::string_view resource_id) {
  HCPRP_ASSIGN_OR_RETURN(arm::ResourceId id, arm::ParseResourceId(resource_id));
  std::string parent_href;
  if (id.kind != arm::ResourceKind::kCluster) {
    HCPRP_ASSIGN_OR_RETURN(std::optional<store::Document> parent,
                           FindResource(*store_, pk, id.Cluster().ToString()));
    if (parent) parent_href = InternalIdOf(parent->body);
    if (parent_href.empty()) return json::array();  // no parent object: nothing under it either
  }
  return cs_->List(clusterservice::ClusterServiceCollection(id.kind, parent_href),
                   clusterservice::SearchForResource(id));
}

Result<std::string> StatusChecks::FindUnrecordedObject(std::string_view pk, std::string_view resource_id) {
  HCPRP_ASSIGN_OR_RETURN(json::array found, ObjectsNamed(pk, resource_id));
  for (const json::value& item : found) {
    const json::object* o = item.if_object();
    if (o == nullptr) continue;
    if (auto object = clusterservice::ParseServiceObject(*o); !object.href.empty()) return object.href;
  }
  return std::string();
}

std::optional<FoundObject> StatusChecks::FindCreatedObject(const OperationRecord& op) {
  auto id = arm::ParseResourceId(op.external_id);
  if (!id.ok()) return std::nullopt;
  auto listed = ObjectsNamed(op.partition_key, op.external_id);
  if (!listed.ok()) {
    ++counters_->errors;
    return std::nullopt;
  }
  for (const json::value& item : *listed) {
    const json::object* o = item.if_object();
    if (o == nullptr) continue;
    clusterservice::ServiceObject object = clusterservice::ParseServiceObject(*o);
    if (object.href.empty() || !MadeFor(op, object)) continue;
    return FoundObject{object.href, clusterservice::ObservedFromClusterService(id->kind, object)};
  }
  return std::nullopt;
}

std::optional<FoundObject> StatusChecks::ObjectFor(const OperationRecord& op,
                                                   const clusterservice::ServiceObject& object) {
  const std::string& href = object.href;
  auto id = arm::ParseResourceId(op.external_id);
  if (!id.ok() || KindOf(id->kind) != KindOfHref(href)) return std::nullopt;
  if (id->kind == arm::ResourceKind::kCluster) {
    const auto& named = object.cluster_resource_id;
    if (!named || !EqualsIgnoreCase(id->ToString(), named->ToString())) return std::nullopt;
  } else {
    if (!EqualsIgnoreCase(id->child_name, object.name)) return std::nullopt;
    const size_t collection = href.rfind('/', href.rfind('/') - 1);  // {parent}/node_pools/{id}
    if (collection == std::string::npos || collection == 0) return std::nullopt;
    auto parent = FindResource(*store_, op.partition_key, id->Cluster().ToString());
    if (!parent.ok() || !parent->has_value() || InternalIdOf((**parent).body) != href.substr(0, collection))
      return std::nullopt;
  }
  if (!MadeFor(op, object)) return std::nullopt;
  return FoundObject{href, clusterservice::ObservedFromClusterService(id->kind, object)};
}

bool StatusChecks::FindCreateOfEvent(const clusterservice::Event& event) {
  if (event.Deleted() || KindOfHref(event.href) == ObjectKind::kCredential) return false;
  for (const OperationRecord& op : index_->UnknownCreates()) {
    if (auto found = ObjectFor(op, event.object)) {
      RememberFound(op, std::move(*found));
      return true;
    }
  }
  // Its create's operation may not be indexed yet (the change feed and the event stream race): a
  // recently made object is kept a while for the create's first check.
  if (event.object.created) memo_->KeepUnclaimed(event.object, *event.object.created, clock_->Now());
  return false;
}

std::optional<FoundObject> StatusChecks::ClaimUnclaimed(const OperationRecord& op) {
  auto id = arm::ParseResourceId(op.external_id);
  if (!id.ok()) return std::nullopt;
  const std::string& name = id->kind == arm::ResourceKind::kCluster ? id->cluster_name : id->child_name;
  for (const clusterservice::ServiceObject& object : memo_->UnclaimedNamed(name)) {
    auto found = ObjectFor(op, object);
    if (!found) continue;
    memo_->DropUnclaimed(object.href);
    return found;
  }
  return std::nullopt;
}

void StatusChecks::RememberFound(OperationRecord op, FoundObject found) {
  op.internal_id = found.href;
  memo_->RememberFound(op.partition_key, op.id, std::move(found));
  index_->Upsert(std::move(op));
}

void StatusChecks::RecoverCreate(const OperationRecord& op) {
  auto found = FindResource(*store_, op.partition_key, op.external_id);
  if (!found.ok()) {
    ++counters_->errors;
    return;
  }
  if (!found->has_value()) {
    writer_->Transit(op.partition_key, op.id, [](const OperationRecord&) -> std::optional<Transition> {
      return FailedWith("InternalServerError", "The resource of this operation no longer exists");
    });
    return;
  }
  const store::Document& res = **found;
  auto doc = arm::ResourceDocument::FromBody(res.body);
  if (!doc.ok()) {
    ++counters_->errors;
    return;
  }
  const bool cluster = EqualsIgnoreCase(doc->resource_type, arm::kClusterDocType);
  std::string href = doc->internal_id;
  json::object observed;  // what the Cluster Service assigned (API URL, issuer URL, ...)
  if (href.empty()) {
    auto req = RecoveryRequest(op, *doc);
    if (!req.ok()) {
      if (req.error().Is(ErrorCode::kUnavailable)) return;  // try again later
      writer_->Transit(op.partition_key, op.id, [&](const OperationRecord&) -> std::optional<Transition> {
        return FailedWith("InternalServerError", req.error().message());
      });
      return;
    }
    ++counters_->cs_creates;
    auto created = cs_->Create(req->collection_href, req->body, op.id);
    if (!created.ok()) {
      if (created.error().Is(ErrorCode::kInvalidArgument)) {
        writer_->Transit(op.partition_key, op.id, [&](const OperationRecord&) -> std::optional<Transition> {
          return FailedWith("InvalidRequestContent", created.error().message());
        });
      } else {
        ++counters_->errors;
      }
      return;
    }
    href = std::string(GetString(*created, "href").value_or(""));
    if (cluster) observed = clusterservice::ObservedFromClusterService(arm::ResourceKind::kCluster, *created);
    if (href.empty()) {
      auto id = GetString(*created, "id");
      if (!id) {
        ++counters_->errors;
        return;
      }
      href = req->collection_href + "/" + std::string(*id);
    }
  }

  if (writer_->RecordObject(op, res, *doc, href, std::move(observed))) {
    ++counters_->recovered_creates;
    logger_->Info("recovered create", {{"operation", op.id}, {"internalId", href}});
  }
}

void StatusChecks::RecordFound(const OperationRecord& op) {
  std::optional<FoundObject> found = memo_->FoundFor(op.partition_key, op.id);
  if (!found) return;  // recorded with a status change, or the operation ended
  auto res = FindResource(*store_, op.partition_key, op.external_id);
  if (!res.ok() || !res->has_value()) return;  // a later check finds it again
  auto doc = arm::ResourceDocument::FromBody((**res).body);
  if (!doc.ok()) return;
  if (writer_->RecordObject(op, **res, *doc, found->href, std::move(found->observed)))
    memo_->ForgetFound(op.partition_key, op.id);
}

Result<clusterservice::CreateRequest> StatusChecks::RecoveryRequest(const OperationRecord& op,
                                                                    const arm::ResourceDocument& doc) {
  HCPRP_ASSIGN_OR_RETURN(arm::ResourceId id, arm::ParseResourceId(doc.resource_id));
  std::string parent_href;
  if (id.kind != arm::ResourceKind::kCluster) {
    auto parent = FindResource(*store_, op.partition_key, id.Cluster().ToString());
    if (parent.ok() && parent->has_value()) parent_href = InternalIdOf((**parent).body);
  }
  // The subscription's tenant, as the frontend sends it.
  std::string tenant;
  auto sub = store_->Read(store::kResources, op.partition_key, op.partition_key);
  if (sub.ok()) {
    auto parsed = arm::SubscriptionDocument::FromBody(sub->id, sub->body);
    if (parsed.ok()) tenant = parsed->tenant_id().value_or("");
  } else if (!sub.error().IsNotFound()) {
    return Error::Unavailable("cannot read the subscription: " + sub.error().message());
  }
  return clusterservice::CreateRequestFor(doc, parent_href, tenant);
}

}  // namespace hcprp::backend
