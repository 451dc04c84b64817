#include "backend/backend.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_set>

#include "api/api.h"
#include "arm/documents.h"
#include "clusterservice/convert.h"
#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::backend {

namespace {

using store::Condition;
using store::PatchOp;
using store::WriteOp;

constexpr size_t kFeedPage = 500;
constexpr size_t kQueryPage = 1000;
constexpr int kMaxWriteAttempts = 4;

// The resources feed's current end: the continuation that reads only what commits from now on.
Result<std::string> FeedHead(store::Store& store) {
  auto head = store.ReadChanges(store::kResources, store::kChangeFeedNow, 1);
  if (!head.ok()) return head.error();
  return head->continuation.empty() ? std::string(store::kChangeFeedNow) : head->continuation;
}

PatchOp Set(std::string_view path, json::value v) {
  return PatchOp{PatchOp::Kind::kSet, std::string(path), std::move(v)};
}
PatchOp Remove(std::string_view path) { return PatchOp{PatchOp::Kind::kRemove, std::string(path), nullptr}; }

// A condition that the value at `path` is what it was when read (absent stays absent).
Condition Unchanged(const json::value& body, std::string_view path) {
  const json::value* v = FindPointer(body, path);
  if (v == nullptr) return Condition{std::string(path), std::nullopt};
  return Condition{std::string(path), *v};
}

json::value ErrorJson(std::string_view code, std::string_view message) {
  return json::object{{"code", code}, {"message", message}};
}

bool TracksProvisioningState(Request r) {
  return r == Request::kCreate || r == Request::kUpdate || r == Request::kDelete;
}

std::string DescribeDuration(Duration d) {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(d).count();
  if (minutes % 60 == 0 && minutes >= 120) return std::to_string(minutes / 60) + " hours";
  if (minutes > 0) return std::to_string(minutes) + " minutes";
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " seconds";
}

// The segment after `/<name>/` in an Azure resource ID (case-insensitive), or "".
std::string SegmentAfter(std::string_view resource_id, std::string_view name) {
  std::string lower = ToLower(resource_id);
  std::string needle = "/" + ToLower(name) + "/";
  size_t pos = lower.find(needle);
  if (pos == std::string::npos) return {};
  std::string_view rest = resource_id.substr(pos + needle.size());
  return std::string(rest.substr(0, rest.find('/')));
}

// The parent cluster's resource ID of a node pool or external auth, or "" for a cluster.
std::string ParentResourceId(std::string_view resource_id) {
  std::string lower = ToLower(resource_id);
  for (std::string_view child : {"/nodepools/", "/externalauths/"}) {
    size_t pos = lower.find(child);
    if (pos != std::string::npos) return std::string(resource_id.substr(0, pos));
  }
  return {};
}

Observation ObservationFromStatus(const json::object& status) {
  clusterservice::CsStatus parsed = clusterservice::ParseCsStatus(status);
  Observation o;
  o.state = std::move(parsed.state);
  o.error_code = std::move(parsed.provision_error_code);
  o.error_message = std::move(parsed.provision_error_message);
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// MinimalCreateRequestBuilder

Result<ClusterServiceCreateRequest> DocumentCreateRequestBuilder::Build(const store::Document& resource,
                                                                        const store::Document* parent) {
  auto doc = arm::ResourceDocument::FromBody(resource.body);
  if (!doc.ok()) return doc.error();
  ClusterServiceCreateRequest req;
  std::string_view kind;
  if (doc->resource_type == arm::kClusterDocType) {
    kind = "Cluster";
    req.collection_href = std::string(clusterservice::kApiPrefix) + "/clusters";
  } else {
    std::string parent_href = parent != nullptr ? PropertyString(parent->body, "internalId") : std::string();
    if (parent_href.empty()) return Error::Unavailable("the parent cluster has no internal ID yet");
    bool pool = doc->resource_type == arm::kNodePoolDocType;
    kind = pool ? "NodePool" : "ExternalAuth";
    req.collection_href = parent_href + (pool ? "/node_pools" : "/external_auth_configs");
  }
  const std::string& rid = doc->resource_id;
  std::string name = rid.substr(rid.rfind('/') + 1);
  json::object azure{{"subscription_id", SubscriptionOfResourceId(rid)},
                     {"resource_group_name", SegmentAfter(rid, "resourceGroups")},
                     {"resource_name", name},
                     {"resource_id", rid}};
  json::object properties;
  if (!doc->resource.empty()) {
    auto stored = api::FromStorage(doc->resource);
    if (!stored.ok()) return stored.error();
    properties = stored->properties;
    if (!stored->location.empty()) azure["region"] = stored->location;
  }
  req.body["kind"] = kind;
  req.body["name"] = name;
  req.body["azure"] = std::move(azure);
  req.body["properties"] = std::move(properties);
  return req;
}

// ---------------------------------------------------------------------------------------------
// Construction, threads

Backend::Backend(BackendOptions options, store::Store* store, clusterservice::Client* cs, const Clock* clock,
                 Logger logger, Notifier* notifier)
    : options_(std::move(options)),
      store_(store),
      cs_(cs),
      clock_(clock),
      logger_(std::move(logger)),
      ownership_(options_.ownership),
      builder_(options_.create_request_builder != nullptr ? options_.create_request_builder
                                                          : &default_builder_),
      notifications_(
          options_.notifications, notifier, clock, logger_.WithComponent("backend.notifier"),
          [this](const std::string& pk, const std::string& id) {
            Status s = store_->Delete(store::kResources, pk, id);
            if (!s.ok() && !s.error().IsNotFound()) {
              logger_.Warn("pending notification not removed", {{"id", id}, {"error", s.error().ToString()}});
            }
          }) {
  if (ownership_ == nullptr) {
    ShardedLeaseOptions lo;
    lo.owner = options_.owner;
    lo.ttl = options_.lease_ttl;
    lo.shards = options_.shards;
    owned_ownership_ = std::make_unique<ShardedLeases>(lo, store_, clock_, logger_);
    ownership_ = owned_ownership_.get();
  }
}

Result<std::unique_ptr<Backend>> Backend::Create(BackendOptions options, store::Store* store,
                                                 clusterservice::Client* cs, const Clock* clock,
                                                 Logger logger, Notifier* notifier) {
  if (store == nullptr || cs == nullptr || clock == nullptr) {
    return Error::InvalidArgument("backend needs a store, a Cluster Service client and a clock");
  }
  if (options.lease_ttl.count() < 3) return Error::InvalidArgument("lease_ttl too short");
  if (options.owner.empty()) options.owner = "backend-" + NewUuidV4();
  if (options.notifications.max_attempts < 1) options.notifications.max_attempts = 1;
  // Start the change feed after everything committed so far; the first resync reads the rest.
  auto head = FeedHead(*store);
  if (!head.ok()) return head.error();
  std::unique_ptr<Backend> b(new Backend(std::move(options), store, cs, clock, std::move(logger), notifier));
  b->feed_continuation_ = std::move(head).value();
  if (b->options_.metrics != nullptr) b->RegisterMetrics(*b->options_.metrics);
  return b;
}

void Backend::WakeTimerLoop() {
  {
    std::lock_guard lock(run_mu_);
    wake_ = true;
  }
  run_cv_.notify_all();
}

void Backend::WakeNotifierLoop() {
  {
    std::lock_guard lock(run_mu_);
    notify_wake_ = true;
  }
  run_cv_.notify_all();
}

Backend::~Backend() { Stop(); }

Status Backend::Start() {
  std::lock_guard lock(run_mu_);
  if (!threads_.empty()) return Error::InvalidArgument("backend already started");
  stopping_ = false;
  threads_.emplace_back([this] { FeedLoop(); });
  threads_.emplace_back([this] { EventLoop(); });
  threads_.emplace_back([this] { TimerLoop(); });
  threads_.emplace_back([this] { LeaseLoop(); });
  threads_.emplace_back([this] { NotifierLoop(); });
  if (options_.gc_enabled) threads_.emplace_back([this] { GcLoop(); });
  return Status::Ok();
}

void Backend::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(run_mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  run_cv_.notify_all();
  for (auto& t : threads) t.join();
  ownership_->Release();
}

void Backend::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock lock(run_mu_);
  run_cv_.wait_for(lock, d, [this] { return stopping_; });
}

void Backend::FeedLoop() {
  while (true) {
    {
      std::lock_guard lock(run_mu_);
      if (stopping_) return;
    }
    auto n = PumpChangesOnce();
    if (!n.ok()) {
      logger_.Warn("change feed read failed", {{"error", n.error().ToString()}});
      WaitFor(options_.feed_wait);
      continue;
    }
    if (*n > 0) continue;
    std::string continuation;
    {
      std::lock_guard lock(feed_mu_);
      continuation = feed_continuation_;
    }
    auto waited = store_->WaitForChanges(store::kResources, continuation, options_.feed_wait);
    if (!waited.ok()) WaitFor(options_.feed_wait);
  }
}

void Backend::EventLoop() {
  bool positioned = false;
  while (true) {
    {
      std::lock_guard lock(run_mu_);
      if (stopping_) return;
    }
    if (!positioned) {
      // Skip the stream's history: a resync right after reads the current states.
      std::optional<Error> failure;
      while (true) {
        uint64_t after;
        {
          std::lock_guard lock(event_mu_);
          after = events_after_;
        }
        auto page = cs_->WatchEvents(after, std::chrono::milliseconds(0));
        if (!page.ok()) {
          failure = page.error();
          break;
        }
        uint64_t last = page->last_sequence;
        for (const auto& e : page->events) last = std::max(last, e.sequence);
        {
          std::lock_guard lock(event_mu_);
          events_after_ = std::max(events_after_, last);
        }
        if (page->events.empty()) break;
      }
      if (failure.has_value()) {
        events_available_ = false;
        WaitFor(failure->Is(ErrorCode::kUnavailable) ? options_.event_retry : options_.event_wait);
        continue;
      }
      positioned = true;
      events_available_ = true;
      resync_requested_ = true;
      run_cv_.notify_all();
      continue;
    }
    auto n = PumpEventsOnce(options_.event_wait);
    if (!n.ok()) {
      WaitFor(n.error().Is(ErrorCode::kUnavailable) ? options_.event_retry : options_.event_wait);
    }
  }
}

void Backend::TimerLoop() {
  while (true) {
    Step(false);
    std::unique_lock lock(run_mu_);
    if (stopping_) return;
    auto wait = std::min(options_.tick, ownership_->RenewInterval());
    run_cv_.wait_for(lock, wait, [this] { return stopping_ || wake_; });
    wake_ = false;
    if (stopping_) return;
  }
}

void Backend::LeaseLoop() {
  while (true) {
    if (ownership_->Tick()) {
      resync_requested_ = true;
      load_subscriptions_requested_ = true;
      WakeTimerLoop();
    }
    std::unique_lock lock(run_mu_);
    if (stopping_) return;
    run_cv_.wait_for(lock, ownership_->NextTickIn(), [this] { return stopping_; });
    if (stopping_) return;
  }
}

void Backend::GcLoop() {
  // Apart from the timer loop: a pass lists every Cluster Service object, which must not hold up
  // the checks of operations.
  while (true) {
    MaybeRunGc(false);
    std::unique_lock lock(run_mu_);
    if (stopping_) return;
    run_cv_.wait_for(lock, options_.tick, [this] { return stopping_; });
    if (stopping_) return;
  }
}

void Backend::NotifierLoop() {
  while (true) {
    notifications_.Deliver();
    auto next = notifications_.NextDueIn();
    std::chrono::milliseconds wait = options_.tick;
    if (next.has_value()) {
      wait = std::min(
          wait, std::chrono::duration_cast<std::chrono::milliseconds>(*next) + std::chrono::milliseconds(1));
    }
    std::unique_lock lock(run_mu_);
    if (stopping_) return;
    run_cv_.wait_for(lock, wait, [this] { return stopping_ || notify_wake_; });
    notify_wake_ = false;
    if (stopping_) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Steps

Status Backend::ReconcileOnce() {
  auto pumped = PumpChangesOnce();
  if (!pumped.ok()) return pumped.error();
  resync_requested_ = true;
  Step(true);
  if (!ownership_->Active()) return Error::Conflict("other backends own every shard of the store");
  notifications_.Deliver();
  return Status::Ok();
}

Result<size_t> Backend::PumpChangesOnce() {
  std::lock_guard lock(feed_mu_);
  size_t total = 0;
  while (true) {
    auto page = store_->ReadChanges(store::kResources, feed_continuation_, kFeedPage);
    if (!page.ok() && page.error().Is(ErrorCode::kOutOfRange)) {
      // Retention removed changes this backend had not read (it was away longer than the store
      // keeps them): start again from now and rebuild the index from the documents.
      logger_.Warn("change feed position expired: resynchronising", {{"error", page.error().ToString()}});
      auto head = FeedHead(*store_);
      if (!head.ok()) return head.error();
      feed_continuation_ = std::move(head).value();
      resync_requested_ = true;
      WakeTimerLoop();
      continue;
    }
    if (!page.ok()) return page.error();
    if (!page->changes.empty()) {
      const int64_t now_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now().time_since_epoch()).count();
      feed_lag_seconds_ = std::max<double>(
          0, static_cast<double>(now_ms - page->changes.back().document.timestamp_ms) / 1000.0);
    } else {
      feed_lag_seconds_ = 0;
    }
    for (const store::Change& c : page->changes) HandleChange(c);
    total += page->changes.size();
    if (!page->continuation.empty()) feed_continuation_ = page->continuation;
    if (page->changes.size() < kFeedPage) break;
  }
  counters_.feed_changes += total;
  return total;
}

Result<size_t> Backend::PumpEventsOnce(std::chrono::milliseconds wait) {
  uint64_t after;
  {
    std::lock_guard lock(event_mu_);
    after = events_after_;
  }
  auto page = cs_->WatchEvents(after, wait);
  if (!page.ok()) {
    if (page.error().Is(ErrorCode::kUnavailable)) events_available_ = false;
    return page.error();
  }
  events_available_ = true;
  uint64_t last = page->last_sequence;
  for (const clusterservice::Event& e : page->events) {
    ApplyEvent(e);
    last = std::max(last, e.sequence);
  }
  {
    std::lock_guard lock(event_mu_);
    events_after_ = std::max(events_after_, last);
  }
  return page->events.size();
}

size_t Backend::DeliverNotificationsOnce() { return notifications_.Deliver(); }

BackendStats Backend::Stats() const {
  BackendStats s;
  s.active = ownership_->Active();
  s.shards_held = ownership_->HeldShards();
  s.events_available = events_available_;
  s.in_flight = index_.Size();
  s.full_resyncs = counters_.full_resyncs;
  s.feed_changes = counters_.feed_changes;
  s.events_received = counters_.events_received;
  s.events_applied = counters_.events_applied;
  s.checks = counters_.checks;
  s.cs_creates = counters_.cs_creates;
  s.cs_deletes = counters_.cs_deletes;
  s.transitions = counters_.transitions;
  s.terminal = counters_.terminal;
  s.deadline_failures = counters_.deadline_failures;
  s.recovered_creates = counters_.recovered_creates;
  s.implicit_deletes = counters_.implicit_deletes;
  s.resources_deleted = counters_.resources_deleted;
  s.gc_deleted = counters_.gc_deleted;
  s.fence_refusals = counters_.fence_refusals;
  s.write_conflicts = counters_.write_conflicts;
  s.errors = counters_.errors;
  s.idle_condition_syncs = counters_.idle_condition_syncs;
  NotificationCounters n = notifications_.Counters();
  s.notifications_sent = n.sent;
  s.notification_failures = n.failed_attempts;
  s.notifications_dropped = n.dropped;
  s.notifications_pending = notifications_.Pending();
  {
    std::lock_guard lock(queue_mu_);
    s.checks_queued = queue_.size();
  }
  s.checks_running = counters_.checks_running;
  {
    std::lock_guard lock(state_mu_);
    s.sweeps_active = sweeps_.size();
  }
  s.sweeps_finished = counters_.sweeps_finished;
  s.feed_lag_seconds = feed_lag_seconds_.load();
  return s;
}

void Backend::Step(bool exhaustive) {
  std::lock_guard pass(pass_mu_);
  if (ownership_->Tick()) {
    resync_requested_ = true;
    load_subscriptions_requested_ = true;
  }
  if (!ownership_->Active()) return;
  TimePoint now = clock_->Now();

  if (load_subscriptions_requested_.exchange(false)) {
    if (Status s = LoadPendingNotifications(); !s.ok()) {
      ++counters_.errors;
      load_subscriptions_requested_ = true;
    }
    if (Status s = LoadDeletedSubscriptions(); !s.ok()) {
      ++counters_.errors;
      load_subscriptions_requested_ = true;
    }
  }

  bool resync = resync_requested_.exchange(false);
  bool poll = false;
  {
    std::lock_guard lock(state_mu_);
    if (now >= next_resync_) resync = true;
    if (now >= next_poll_) {
      poll = true;
      next_poll_ = now + options_.poll_interval;
    }
  }
  if (resync) {
    if (Status s = RebuildIndex(); s.ok()) {
      ++counters_.full_resyncs;
      std::lock_guard lock(state_mu_);
      next_resync_ = now + options_.resync_interval;
    } else {
      ++counters_.errors;
      resync_requested_ = true;
      logger_.Warn("resync failed", {{"error", s.error().ToString()}});
    }
  } else if (poll) {
    bool events = events_available_;
    for (const OperationRecord& op : index_.All()) {
      bool delete_unissued = false;
      if (op.request == Request::kDelete) {
        std::lock_guard lock(state_mu_);
        delete_unissued = delete_issued_.count({op.partition_key, op.id}) == 0;
      }
      if (!events || op.request == Request::kRequestCredential || op.request == Request::kRevokeCredentials ||
          op.internal_id.empty() || delete_unissued) {
        EnqueueCheck(op);
      }
    }
  }

  ApplyDeadlines();
  std::atomic<size_t> delete_budget{exhaustive ? std::numeric_limits<size_t>::max()
                                               : options_.max_cs_deletes_per_step};
  size_t check_budget = exhaustive ? std::numeric_limits<size_t>::max() : options_.max_checks_per_step;
  Drained drained = DrainChecks(check_budget, &delete_budget);
  RunSweeps(exhaustive);
  if (exhaustive) drained = DrainChecks(check_budget, &delete_budget);
  if (drained == Drained::kBudgetSpent) {
    WakeTimerLoop();  // more checks are due now: the next step need not wait for the tick
  }

  if (exhaustive) MaybeRunGc(true);  // a running backend collects on its own thread (GcLoop)
}

void Backend::MaybeRunGc(bool force) {
  if (!options_.gc_enabled) return;
  std::lock_guard pass(gc_mu_);
  TimePoint now = clock_->Now();
  {
    std::lock_guard lock(state_mu_);
    if (!force && now < next_gc_) return;
    next_gc_ = now + options_.gc_interval;
  }
  RunGc();
}

Status Backend::RebuildIndex() {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kOperationDocType);
  q.non_terminal_only = true;
  q.max_items = kQueryPage;
  HCPRP_RETURN_IF_ERROR(store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (!ownership_->FenceFor(doc.partition_key)) return;  // another backend's shard
    auto op = ParseOperation(doc);
    if (op && !arm::IsTerminalState(op->status)) index_.Upsert(*op);
  }));
  // Entries of shards given up leave the index; entries the query no longer returns are dropped
  // when their check re-reads them.
  for (const OperationRecord& op : index_.All()) {
    if (!ownership_->FenceFor(op.partition_key)) {
      index_.Remove(op.partition_key, op.id);
      continue;
    }
    EnqueueCheck(op);
  }
  return Status::Ok();
}

void Backend::AppendPendingNotification(std::string_view op_id, std::string_view uri,
                                        std::vector<WriteOp>* ops) {
  if (uri.empty()) return;
  ops->push_back(WriteOp::Create(arm::PendingNotificationId(op_id), arm::PendingNotificationBody(op_id, uri),
                                 arm::kPendingNotificationTtlSeconds));
}

void Backend::QueuePendingNotification(const store::Document& seen) {
  if (notifications_.Contains(seen.partition_key, seen.id)) return;
  // Read it again: a change feed entry may be of a notification delivered (and removed) since.
  auto fresh = store_->Read(store::kResources, seen.partition_key, seen.id);
  if (!fresh.ok()) return;
  const store::Document& pending = *fresh;
  std::string op_id = PropertyString(pending.body, "operationId");
  std::string uri = PropertyString(pending.body, "uri");
  auto op = store_->Read(store::kResources, pending.partition_key, op_id);
  if (!op.ok()) {
    // Delivered meanwhile (the document is gone too), or the operation expired: nothing to send.
    if (op.error().IsNotFound()) (void)store_->Delete(store::kResources, pending.partition_key, pending.id);
    return;
  }
  if (uri.empty() ||
      !notifications_.Enqueue(uri, OperationStatusResource(*op), pending.partition_key, pending.id))
    return;
  WakeNotifierLoop();
}

Status Backend::LoadPendingNotifications() {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kPendingNotificationDocType);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (ownership_->FenceFor(doc.partition_key)) QueuePendingNotification(doc);
  });
}

Status Backend::LoadDeletedSubscriptions() {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kSubscriptionDocType);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (EqualsIgnoreCase(PropertyString(doc.body, "state"), "Deleted"))
      OnSubscriptionDeleted(doc.partition_key);
  });
}

void Backend::HandleChange(const store::Change& change) {
  const store::Document& doc = change.document;
  // A replace too: the feed lists a document's latest version, so a create superseded before it was
  // read shows as a replace (queueing is idempotent).
  if ((change.kind == store::Change::Kind::kCreate || change.kind == store::Change::Kind::kReplace) &&
      ResourceTypeOf(doc.body) == arm::kPendingNotificationDocType) {
    if (ownership_->FenceFor(doc.partition_key)) QueuePendingNotification(doc);
    return;
  }
  if (IsOperationDocument(doc.body)) {
    if (change.kind == store::Change::Kind::kDelete || change.kind == store::Change::Kind::kExpire) {
      index_.Remove(doc.partition_key, doc.id);
      return;
    }
    auto op = ParseOperation(doc);
    if (!op) return;
    if (arm::IsTerminalState(op->status) || !ownership_->FenceFor(doc.partition_key)) {
      index_.Remove(doc.partition_key, doc.id);
      return;
    }
    if (index_.Upsert(*op)) EnqueueCheck(*op);
    return;
  }
  if (IsSubscriptionDocument(doc.body) && change.kind != store::Change::Kind::kDelete &&
      change.kind != store::Change::Kind::kExpire &&
      EqualsIgnoreCase(PropertyString(doc.body, "state"), "Deleted")) {
    OnSubscriptionDeleted(doc.partition_key);
    WakeTimerLoop();
  }
}

void Backend::ApplyEvent(const clusterservice::Event& event) {
  const auto received = std::chrono::steady_clock::now();
  ++counters_.events_received;
  std::vector<OperationRecord> ops = index_.ByInternalId(event.href);
  if (ops.empty()) {
    SyncIdleConditions(event);
    return;
  }
  ++counters_.events_applied;
  // The event carries the whole object; its status (state, provision error) sits under "status"
  // (older services put the error fields at the top level).
  const json::object* status = GetObject(event.object, "status");
  Observation obs = ObservationFromStatus(status ? *status : event.object);
  if (status && obs.error_code.empty()) {
    Observation top = ObservationFromStatus(event.object);
    obs.error_code = std::move(top.error_code);
    if (obs.error_message.empty()) obs.error_message = std::move(top.error_message);
  }
  obs.state = event.state;
  obs.gone = event.state == "deleted";
  if (status && !obs.gone) {
    for (const OperationRecord& op : ops) {
      if (op.request == Request::kRequestCredential || op.request == Request::kRevokeCredentials) continue;
      SyncConditions(op, event.href, *status);
      break;  // one resource per Cluster Service object
    }
  }
  for (const OperationRecord& op : ops) {
    if (op.request == Request::kRequestCredential || op.request == Request::kRevokeCredentials) {
      EnqueueCheck(op);
      continue;
    }
    ObjectKind kind = KindOfHref(event.href);
    if (op.request == Request::kUpdate) {
      // An update starts from a ready object, so a "ready" (or "error") still in the event stream
      // from before the update would end it at once: an update ends only on a fresh status read.
      auto t = Decide(op.request, kind, obs);
      if (t && arm::IsTerminalState(t->status)) {
        EnqueueCheck(op);
        continue;
      }
    }
    Outcome o = Transit(op.partition_key, op.id,
                        [&](const OperationRecord& cur) { return Decide(cur.request, kind, obs); });
    if (o == Outcome::kApplied && instruments_.event_to_commit != nullptr) {
      instruments_.event_to_commit->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - received).count());
    }
    // The store refused (down or restarting): the event is consumed, so check the status again later.
    if (o == Outcome::kError) EnqueueCheck(op);
    if (op.request == Request::kDelete && !obs.gone && obs.state != "uninstalling") EnqueueCheck(op);
  }
}

void Backend::SyncConditions(const OperationRecord& op, const std::string& href, const json::object& status) {
  SyncConditionsOf(op.partition_key, op.external_id, href, status);
}

namespace {

// The ARM resource ID of a cluster from the "azure" block of its Cluster Service object ("" if absent).
std::string ClusterResourceIdOf(const json::object& cs_cluster) {
  const json::object* az = GetObject(cs_cluster, "azure");
  if (az == nullptr) return "";
  auto sub = GetString(*az, "subscription_id");
  auto rg = GetString(*az, "resource_group_name");
  auto name = GetString(*az, "resource_name");
  if (!sub || !rg || !name || sub->empty() || rg->empty() || name->empty()) return "";
  return "/subscriptions/" + std::string(*sub) + "/resourceGroups/" + std::string(*rg) +
         "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + std::string(*name);
}

}  // namespace

void Backend::SyncIdleConditions(const clusterservice::Event& event) {
  if (event.state == "deleted") return;
  const json::object* status = GetObject(event.object, "status");
  if (status == nullptr || !status->contains("conditions")) return;
  std::string resource_id;
  switch (KindOfHref(event.href)) {
    case ObjectKind::kCluster:
      resource_id = ClusterResourceIdOf(event.object);
      break;
    case ObjectKind::kNodePool: {
      // The node pool names itself; its cluster's object says where the cluster lives in ARM.
      const json::object* az = GetObject(event.object, "azure");
      std::string name(az ? GetString(*az, "resource_name").value_or("") : "");
      if (name.empty()) name = std::string(GetString(event.object, "name").value_or(""));
      size_t cut = event.href.find("/node_pools/");
      if (name.empty() || cut == std::string::npos) return;
      auto cluster = cs_->Get(event.href.substr(0, cut));
      if (!cluster.ok()) return;
      std::string cluster_id = ClusterResourceIdOf(*cluster);
      if (cluster_id.empty()) return;
      resource_id = cluster_id + "/nodePools/" + name;
      break;
    }
    default:
      return;
  }
  if (resource_id.empty()) return;
  std::string pk = SubscriptionOfResourceId(resource_id);
  if (pk.empty() || !ownership_->FenceFor(pk)) return;
  ++counters_.idle_condition_syncs;
  SyncConditionsOf(pk, resource_id, event.href, *status);
}

void Backend::SyncConditionsOf(const std::string& pk, const std::string& resource_id, const std::string& href,
                               const json::object& status) {
  auto it = status.find("conditions");
  if (it == status.end() || !it->value().is_array()) return;
  auto fence = ownership_->FenceFor(pk);
  if (!fence) return;
  auto resource = FindResource(pk, resource_id);
  if (!resource.ok() || !resource->has_value()) return;
  const store::Document& res = **resource;
  if (PropertyString(res.body, "internalId") != href) return;
  json::object service_status;
  if (const json::value* cur = FindPointer(res.body, arm::kPathServiceStatus); cur && cur->is_object()) {
    service_status = cur->as_object();
  }
  if (auto c = service_status.find("conditions"); c != service_status.end() && c->value() == it->value())
    return;
  service_status["conditions"] = it->value();
  auto r = store_->Batch(
      store::kResources, pk,
      {WriteOp::Patch(res.id, {Set(arm::kPathServiceStatus, json::value(std::move(service_status)))},
                      {Unchanged(res.body, arm::kPathServiceStatus)})},
      &*fence);
  if (!r.ok() && !r.error().IsPreconditionFailed() && !r.error().IsNotFound()) {
    ++counters_.errors;
    logger_.Warn("cannot sync conditions", {{"resource", res.id}, {"error", r.error().ToString()}});
  }
}

void Backend::EnqueueCheck(const OperationRecord& op) {
  {
    std::lock_guard lock(queue_mu_);
    auto key = std::make_pair(op.partition_key, op.id);
    if (!queued_.insert(key).second) return;
    queue_.push_back(std::move(key));
  }
  WakeTimerLoop();
}

Backend::Drained Backend::DrainChecks(size_t max_checks, std::atomic<size_t>* cs_delete_budget) {
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
      std::pair<std::string, std::string> key;
      {
        std::lock_guard lock(queue_mu_);
        if (queue_.empty()) {
          emptied = true;
          stopped = true;
          return;
        }
        key = queue_.front();
        queue_.pop_front();
        queued_.erase(key);
      }
      auto op = index_.Find(key.first, key.second);
      if (!op) continue;
      ++counters_.checks_running;
      const bool checked = CheckOperation(*op, cs_delete_budget);
      --counters_.checks_running;
      if (!checked) {
        std::lock_guard lock(queue_mu_);
        if (queued_.insert(key).second) queue_.push_back(key);
        stalled = true;
        stopped = true;
        return;
      }
    }
  };
  size_t queued;
  {
    std::lock_guard lock(queue_mu_);
    queued = queue_.size();
  }
  size_t helpers =
      std::min<size_t>(options_.check_concurrency > 0 ? options_.check_concurrency - 1 : 0, queued / 2);
  std::vector<std::thread> threads;
  threads.reserve(helpers);
  for (size_t i = 0; i < helpers; ++i) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (stalled) return Drained::kStalled;
  return emptied ? Drained::kEmptied : Drained::kBudgetSpent;
}

std::optional<Duration> Backend::DeadlineOf(Request request) const {
  switch (request) {
    case Request::kCreate:
      return options_.create_deadline;
    case Request::kUpdate:
      return options_.update_deadline;
    case Request::kDelete:
      return options_.delete_deadline;
    case Request::kRequestCredential:
    case Request::kRevokeCredentials:
      return options_.credential_deadline;
  }
  return std::nullopt;
}

void Backend::ApplyDeadlines() {
  TimePoint now = clock_->Now();
  for (const OperationRecord& op : index_.All()) {
    auto deadline = DeadlineOf(op.request);
    if (!deadline || !op.start_time || now < *op.start_time + *deadline) continue;
    Outcome o =
        Transit(op.partition_key, op.id, [&](const OperationRecord& cur) -> std::optional<Transition> {
          if (!cur.start_time || now < *cur.start_time + *deadline) return std::nullopt;
          return FailedWith("OperationTimedOut",
                            "The " + cur.request_name + " operation did not complete within " +
                                DescribeDuration(*deadline) + " (last status " + cur.status + ")");
        });
    if (o == Outcome::kApplied) {
      ++counters_.deadline_failures;
      logger_.Warn("operation deadline passed", {{"operation", op.id}, {"request", op.request_name}});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Checking one operation against the Cluster Service

bool Backend::CheckOperation(const OperationRecord& op, std::atomic<size_t>* cs_delete_budget) {
  if (!ownership_->FenceFor(op.partition_key)) return true;
  ++counters_.checks;
  TimePoint now = clock_->Now();
  if (auto deadline = DeadlineOf(op.request);
      deadline && op.start_time && now >= *op.start_time + *deadline) {
    return true;  // ApplyDeadlines ends it
  }

  if (op.awaiting_cluster_service && op.start_time && now - *op.start_time < options_.create_recovery_grace) {
    return true;  // the frontend has not confirmed the update's Cluster Service request yet
  }
  std::string href = op.internal_id;
  if (href.empty()) {
    if (op.request == Request::kCreate) {
      if (op.start_time && now - *op.start_time >= options_.create_recovery_grace) RecoverCreate(op);
      return true;
    }
    auto resource = FindResource(op.partition_key, op.external_id);
    if (!resource.ok()) {
      ++counters_.errors;
      return true;
    }
    if (resource->has_value()) href = PropertyString((*resource)->body, "internalId");
    if (href.empty()) {
      Observation gone;
      gone.gone = true;
      // Nothing was ever made in the Cluster Service: a Delete is done, anything else cannot be.
      Transit(op.partition_key, op.id, [&](const OperationRecord& cur) -> std::optional<Transition> {
        if (cur.request == Request::kDelete)
          return Transition{std::string(arm::kStateSucceeded), std::nullopt};
        return FailedWith("InternalServerError", "The resource has no Cluster Service object");
      });
      return true;
    }
  }

  Observation obs;
  if (op.request == Request::kRequestCredential) {
    auto cred = cs_->Get(href);
    if (cred.ok()) {
      obs.state = std::string(GetString(*cred, "status").value_or(""));
    } else if (cred.error().IsNotFound()) {
      obs.gone = true;
    } else {
      ++counters_.errors;
      return true;
    }
  } else if (op.request == Request::kRevokeCredentials) {
    auto creds = cs_->List(href + "/break_glass_credentials");
    if (creds.ok()) {
      obs.state = std::string(kCredentialsRevoked);
      for (const json::value& item : *creds) {
        const json::object* o = item.if_object();
        if (o == nullptr) continue;
        std::string_view status = GetString(*o, "status").value_or("");
        if (status == "awaiting_revocation" || status == "revoking")
          obs.state = std::string(kCredentialsRevoking);
      }
    } else if (creds.error().IsNotFound()) {
      obs.gone = true;
    } else {
      ++counters_.errors;
      return true;
    }
  } else {
    auto status = cs_->GetStatus(href);
    if (status.ok()) {
      obs = ObservationFromStatus(*status);
      SyncConditions(op, href, *status);
    } else if (status.error().IsNotFound()) {
      obs.gone = true;
    } else {
      ++counters_.errors;
      return true;
    }
    if (op.request == Request::kDelete && obs.state == "uninstalling") {
      // The deletion is under way (the frontend issued it): events or polls carry it from here.
      std::lock_guard lock(state_mu_);
      delete_issued_.insert({op.partition_key, op.id});
    }
    if (op.request == Request::kDelete && !obs.gone && obs.state != "uninstalling") {
      bool issued;
      {
        std::lock_guard lock(state_mu_);
        issued = delete_issued_.count({op.partition_key, op.id}) > 0;
      }
      if (!issued) {
        size_t left = cs_delete_budget->load();
        do {
          if (left == 0) return false;
        } while (!cs_delete_budget->compare_exchange_weak(left, left - 1));
        ++counters_.cs_deletes;
        Status d = cs_->Delete(href);
        if (!d.ok() && !d.error().IsNotFound()) {
          ++counters_.errors;
          return true;
        }
        {
          std::lock_guard lock(state_mu_);
          delete_issued_.insert({op.partition_key, op.id});
        }
        auto after = cs_->GetStatus(href);
        if (after.ok()) {
          obs = ObservationFromStatus(*after);
        } else if (after.error().IsNotFound()) {
          obs = Observation{};
          obs.gone = true;
        } else {
          return true;
        }
      }
    }
  }
  ObjectKind kind = KindOfHref(href);
  Outcome o = Transit(op.partition_key, op.id,
                      [&](const OperationRecord& cur) { return Decide(cur.request, kind, obs); });
  if (o == Outcome::kGone || (o == Outcome::kNoChange && !index_.Find(op.partition_key, op.id))) {
    std::lock_guard lock(state_mu_);
    delete_issued_.erase({op.partition_key, op.id});
  }
  return o != Outcome::kError;  // a store failure: requeued, tried again on a later step
}

void Backend::RecoverCreate(const OperationRecord& op) {
  auto resource = FindResource(op.partition_key, op.external_id);
  if (!resource.ok()) {
    ++counters_.errors;
    return;
  }
  if (!resource->has_value()) {
    Transit(op.partition_key, op.id, [](const OperationRecord&) -> std::optional<Transition> {
      return FailedWith("InternalServerError", "The resource of this operation no longer exists");
    });
    return;
  }
  const store::Document& res = **resource;
  std::string href = PropertyString(res.body, "internalId");
  json::object observed;  // what the Cluster Service assigned (API URL, issuer URL, ...)
  if (href.empty()) {
    std::optional<store::Document> parent;
    std::string parent_id = ParentResourceId(op.external_id);
    if (!parent_id.empty()) {
      auto p = FindResource(op.partition_key, parent_id);
      if (p.ok() && p->has_value()) parent = **p;
    }
    auto req = builder_->Build(res, parent ? &*parent : nullptr);
    if (!req.ok()) {
      if (req.error().Is(ErrorCode::kUnavailable)) return;  // try again later
      Transit(op.partition_key, op.id, [&](const OperationRecord&) -> std::optional<Transition> {
        return FailedWith("InternalServerError", req.error().message());
      });
      return;
    }
    ++counters_.cs_creates;
    auto created = cs_->Create(req->collection_href, req->body, op.id);
    if (!created.ok()) {
      if (created.error().Is(ErrorCode::kInvalidArgument)) {
        Transit(op.partition_key, op.id, [&](const OperationRecord&) -> std::optional<Transition> {
          return FailedWith("InvalidRequestContent", created.error().message());
        });
      } else {
        ++counters_.errors;
      }
      return;
    }
    href = std::string(GetString(*created, "href").value_or(""));
    if (ParentResourceId(op.external_id).empty()) observed = clusterservice::ClusterReadOnlyFromCs(*created);
    if (href.empty()) {
      auto id = GetString(*created, "id");
      if (!id) {
        ++counters_.errors;
        return;
      }
      href = req->collection_href + "/" + std::string(*id);
    }
  }

  std::lock_guard lock(ApplyMutex(op.partition_key));
  auto fence = ownership_->FenceFor(op.partition_key);
  if (!fence) return;
  auto current = store_->Read(store::kResources, op.partition_key, op.id);
  if (!current.ok()) return;
  auto cur = ParseOperation(*current);
  if (!cur || arm::IsTerminalState(cur->status)) {
    index_.Remove(op.partition_key, op.id);
    return;
  }
  std::vector<WriteOp> ops;
  ops.push_back(WriteOp::Patch(
      op.id, {Set(arm::kPathInternalId, json::value(href))},
      {Unchanged(current->body, arm::kPathStatus), Unchanged(current->body, arm::kPathInternalId)}));
  if (PropertyString(res.body, "activeOperationId") == op.id &&
      PropertyString(res.body, "internalId").empty()) {
    std::vector<store::PatchOp> set = {Set(arm::kPathInternalId, json::value(href))};
    // The frontend records these with the internal ID; a create it could not record gets them here.
    const json::value* recorded = FindPointer(res.body, arm::kPathObserved);
    if (!observed.empty() &&
        (recorded == nullptr || (recorded->is_object() && recorded->as_object().empty()))) {
      set.push_back(Set(arm::kPathObserved, json::value(std::move(observed))));
    }
    ops.push_back(WriteOp::Patch(
        res.id, std::move(set),
        {Unchanged(res.body, arm::kPathActiveOperationId), Unchanged(res.body, arm::kPathInternalId)}));
  }
  auto r = store_->Batch(store::kResources, op.partition_key, std::move(ops), &*fence);
  if (!r.ok()) {
    if (r.error().IsPreconditionFailed() && !store::FailedBatchIndex(r.error())) {
      ownership_->FenceRefused(*fence);
      ++counters_.fence_refusals;
    } else {
      ++counters_.write_conflicts;
    }
    return;
  }
  ++counters_.recovered_creates;
  logger_.Info("recovered create", {{"operation", op.id}, {"internalId", href}});
  if (auto updated = ParseOperation(r->documents[0])) {
    index_.Upsert(*updated);
    EnqueueCheck(*updated);
  }
}

// ---------------------------------------------------------------------------------------------
// Writing a transition

namespace {

// The billing writes that commit with an operation's terminal batch (in the billing container, same
// partition): the record of a created resource, the deletion time of every deleted resource billed.
Result<std::vector<WriteOp>> BillingWrites(store::Store& store, const OperationRecord& op,
                                           const Transition& t,
                                           const std::optional<store::Document>& resource,
                                           const std::vector<store::Document>& deleted,
                                           const std::string& now) {
  std::vector<WriteOp> out;
  if (op.request == Request::kCreate && t.status == arm::kStateSucceeded && resource.has_value()) {
    json::object body;
    body["resourceId"] = PropertyString(resource->body, "resourceId");
    body["resourceType"] = ResourceTypeOf(resource->body);
    body["subscriptionId"] = op.partition_key;
    body["internalId"] = PropertyString(resource->body, "internalId");
    body["creationTime"] = now;
    out.push_back(WriteOp::Upsert(resource->id, std::move(body)).In(store::kBilling));
  }
  for (const store::Document& res : deleted) {
    auto existing = store.Read(store::kBilling, res.partition_key, res.id);
    if (!existing.ok()) {
      if (existing.error().IsNotFound()) continue;  // never billed
      return existing.error();
    }
    WriteOp patch = WriteOp::Patch(res.id, {Set("/deletionTime", json::value(now))});
    patch.if_match = existing->etag;
    out.push_back(std::move(patch).In(store::kBilling));
  }
  return out;
}

}  // namespace

Result<std::optional<store::Document>> Backend::FindResource(std::string_view pk,
                                                             std::string_view resource_id) {
  if (resource_id.empty()) return std::optional<store::Document>();
  auto doc = store_->Read(store::kResources, pk, arm::ResourceDocumentId(resource_id));
  if (doc.ok()) return std::optional<store::Document>(std::move(doc).value());
  if (!doc.error().IsNotFound()) return doc.error();
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = std::string(pk);
  q.resource_id = std::string(resource_id);
  q.max_items = 10;
  auto page = store_->Query(q);
  if (!page.ok()) return page.error();
  for (store::Document& d : page->documents) {
    if (IsResourceDocument(d.body)) return std::optional<store::Document>(std::move(d));
  }
  return std::optional<store::Document>();
}

Backend::Outcome Backend::Transit(std::string_view pk, std::string_view op_id, const Decider& decide) {
  std::lock_guard lock(ApplyMutex(pk));
  for (int attempt = 0; attempt < kMaxWriteAttempts; ++attempt) {
    auto fence = ownership_->FenceFor(pk);
    if (!fence) return Outcome::kNotOwner;
    auto doc = store_->Read(store::kResources, pk, op_id);
    if (!doc.ok()) {
      if (doc.error().IsNotFound()) {
        index_.Remove(pk, op_id);
        return Outcome::kGone;
      }
      ++counters_.errors;
      return Outcome::kError;
    }
    auto op = ParseOperation(*doc);
    if (!op || arm::IsTerminalState(op->status)) {
      index_.Remove(pk, op_id);
      return Outcome::kNoChange;
    }
    std::optional<Transition> t = decide(*op);
    if (!t || t->status == op->status) return Outcome::kNoChange;
    const bool terminal = arm::IsTerminalState(t->status);
    const std::string now = FormatRfc3339(clock_->Now(), true);

    std::vector<WriteOp> ops;
    std::vector<PatchOp> patch = {Set(arm::kPathStatus, json::value(t->status)),
                                  Set(arm::kPathLastTransitionTime, json::value(now))};
    if (t->error) patch.push_back(Set(arm::kPathError, ErrorJson(t->error->code, t->error->message)));
    ops.push_back(
        WriteOp::Patch(std::string(op_id), std::move(patch), {Unchanged(doc->body, arm::kPathStatus)}));
    std::vector<size_t> ended = {0};  // batch positions of operations this batch ends
    if (terminal) AppendPendingNotification(op_id, op->notification_uri, &ops);

    auto resource = FindResource(pk, op->external_id);
    if (!resource.ok()) {
      ++counters_.errors;
      return Outcome::kError;
    }
    std::vector<store::Document> deleted;
    const bool owns =
        resource->has_value() && PropertyString((*resource)->body, "activeOperationId") == op_id;
    if (owns) {
      const store::Document& res = **resource;
      Condition still_active = Unchanged(res.body, arm::kPathActiveOperationId);
      if (terminal && op->request == Request::kDelete && t->status == arm::kStateSucceeded) {
        WriteOp del = WriteOp::Delete(res.id);
        del.conditions.push_back(still_active);
        ops.push_back(std::move(del));
        deleted.push_back(res);
        // Children go with their parent; their operations end with it.
        store::QueryOptions q;
        q.container = std::string(store::kResources);
        q.partition_key = std::string(pk);
        q.resource_id_prefix = PropertyString(res.body, "resourceId") + "/";
        q.max_items = kQueryPage;
        bool query_failed = false;
        while (true) {
          auto page = store_->Query(q);
          if (!page.ok()) {
            query_failed = true;
            break;
          }
          for (store::Document& child : page->documents) {
            if (!IsResourceDocument(child.body)) continue;
            ops.push_back(WriteOp::Delete(child.id, child.etag));
            std::string child_op = PropertyString(child.body, "activeOperationId");
            if (!child_op.empty()) {
              auto cop = store_->Read(store::kResources, pk, child_op);
              if (cop.ok()) {
                auto rec = ParseOperation(*cop);
                if (rec && !arm::IsTerminalState(rec->status)) {
                  std::vector<PatchOp> cp = {Set(arm::kPathLastTransitionTime, json::value(now))};
                  if (rec->request == Request::kDelete) {
                    cp.push_back(Set(arm::kPathStatus, json::value(arm::kStateSucceeded)));
                  } else {
                    cp.push_back(Set(arm::kPathStatus, json::value(arm::kStateCanceled)));
                    cp.push_back(
                        Set(arm::kPathError, ErrorJson(arm::kCanceledCode, arm::kSupersededMessage)));
                  }
                  ops.push_back(
                      WriteOp::Patch(child_op, std::move(cp), {Unchanged(cop->body, arm::kPathStatus)}));
                  ended.push_back(ops.size() - 1);
                  AppendPendingNotification(child_op, rec->notification_uri, &ops);
                }
              }
            }
            deleted.push_back(std::move(child));
          }
          if (page->continuation.empty()) break;
          q.continuation = page->continuation;
        }
        if (query_failed) {
          ++counters_.errors;
          return Outcome::kError;
        }
      } else {
        std::vector<PatchOp> rp;
        if (TracksProvisioningState(op->request))
          rp.push_back(Set(arm::kPathProvisioningState, json::value(t->status)));
        if (terminal) rp.push_back(Remove(arm::kPathActiveOperationId));
        if (!rp.empty()) ops.push_back(WriteOp::Patch(res.id, std::move(rp), {still_active}));
      }
    }

    if (terminal) {  // the billing record commits with the operation's end: one durable commit
      auto billing = BillingWrites(*store_, *op, *t, owns ? *resource : std::nullopt, deleted, now);
      if (!billing.ok()) {
        ++counters_.errors;
        return Outcome::kError;
      }
      for (WriteOp& b : *billing) ops.push_back(std::move(b));
    }

    auto r = store_->Batch(store::kResources, pk, std::move(ops), &*fence);
    if (!r.ok()) {
      const Error& e = r.error();
      if (e.IsPreconditionFailed() && !store::FailedBatchIndex(e)) {
        ownership_->FenceRefused(*fence);
        ++counters_.fence_refusals;
        logger_.Warn("write refused: stale fence", {{"operation", std::string(op_id)}});
        return Outcome::kNotOwner;
      }
      if (e.IsPreconditionFailed() || e.IsNotFound()) {
        ++counters_.write_conflicts;
        continue;  // something changed meanwhile: read again
      }
      ++counters_.errors;
      logger_.Warn("operation write failed", {{"operation", std::string(op_id)}, {"error", e.ToString()}});
      return Outcome::kError;
    }

    ++counters_.transitions;
    if (!terminal) {
      op->status = t->status;
      index_.Upsert(*op);
      return Outcome::kApplied;
    }
    ++counters_.terminal;
    std::vector<store::Document> ended_docs;
    for (size_t i : ended) {
      if (i < r->documents.size()) ended_docs.push_back(r->documents[i]);
    }
    AfterTerminal(ended_docs, deleted);
    return Outcome::kApplied;
  }
  return Outcome::kError;
}

void Backend::AfterTerminal(const std::vector<store::Document>& ended_operations,
                            const std::vector<store::Document>& deleted_resources) {
  for (const store::Document& d : ended_operations) {
    index_.Remove(d.partition_key, d.id);
    {
      std::lock_guard lock(state_mu_);
      delete_issued_.erase({d.partition_key, d.id});
    }
    std::string uri = PropertyString(d.body, "notificationUri");
    if (!uri.empty()) {
      notifications_.Enqueue(uri, OperationStatusResource(d), d.partition_key,
                             arm::PendingNotificationId(d.id));
      WakeNotifierLoop();
    }
  }
  counters_.resources_deleted += deleted_resources.size();
}

// ---------------------------------------------------------------------------------------------
// Deleted subscriptions

void Backend::OnSubscriptionDeleted(const std::string& pk) {
  std::lock_guard lock(state_mu_);
  sweeps_.try_emplace(pk, Sweep{});
}

void Backend::RunSweeps(bool exhaustive) {
  TimePoint now = clock_->Now();
  std::vector<std::pair<std::string, Sweep>> due;
  {
    std::lock_guard lock(state_mu_);
    for (const auto& [pk, s] : sweeps_) {
      if (exhaustive || s.due <= now) due.emplace_back(pk, s);
    }
  }
  for (auto& [pk, sweep] : due) {
    if (!ownership_->FenceFor(pk)) continue;  // its shard's owner sweeps it
    bool failed = false;
    do {
      if (Status st = SweepPage(pk, &sweep); !st.ok()) {
        ++counters_.errors;
        failed = true;
        break;
      }
    } while (exhaustive && !sweep.continuation.empty());
    std::lock_guard lock(state_mu_);
    if (!failed && sweep.continuation.empty()) {
      if (!sweep.found_any) {
        sweeps_.erase(pk);
        ++counters_.sweeps_finished;
        logger_.Info("deleted subscription is empty", {{"subscription", pk}});
        continue;
      }
      sweep.found_any = false;
      sweep.due = now + options_.resync_interval;  // look again for stragglers later
    }
    sweeps_[pk] = sweep;
  }
}

Status Backend::SweepPage(const std::string& pk, Sweep* sweep) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = pk;
  q.resource_id_prefix = "/subscriptions/";
  q.max_items = options_.sweep_page_size;
  q.continuation = sweep->continuation;
  auto page = store_->Query(q);
  if (!page.ok()) return page.error();
  for (const store::Document& doc : page->documents) {
    if (!IsResourceDocument(doc.body)) continue;
    sweep->found_any = true;
    EnsureDeleteOperation(doc);
  }
  sweep->continuation = page->continuation;
  return Status::Ok();
}

void Backend::EnsureDeleteOperation(const store::Document& resource) {
  const std::string& pk = resource.partition_key;
  std::string active = PropertyString(resource.body, "activeOperationId");
  std::optional<store::Document> active_doc;
  std::optional<OperationRecord> active_op;
  if (!active.empty()) {
    auto d = store_->Read(store::kResources, pk, active);
    if (d.ok()) {
      active_op = ParseOperation(*d);
      active_doc = std::move(d).value();
    }
  }
  if (active_op && !arm::IsTerminalState(active_op->status) && active_op->request == Request::kDelete) {
    if (index_.Upsert(*active_op)) EnqueueCheck(*active_op);
    return;
  }
  std::lock_guard lock(ApplyMutex(pk));
  auto fence = ownership_->FenceFor(pk);
  if (!fence) return;
  TimePoint now = clock_->Now();
  std::string new_id = NewUuidV4();
  std::string resource_id = PropertyString(resource.body, "resourceId");
  std::vector<WriteOp> ops;
  ops.push_back(WriteOp::Create(new_id,
                                NewOperationBody(Request::kDelete, arm::kStateDeleting, resource_id,
                                                 PropertyString(resource.body, "internalId"),
                                                 PropertyString(resource.body, "location"), now),
                                arm::kDefaultOperationTtlSeconds));
  ops.push_back(WriteOp::Patch(resource.id,
                               {Set(arm::kPathActiveOperationId, json::value(new_id)),
                                Set(arm::kPathProvisioningState, json::value(arm::kStateDeleting))},
                               {Unchanged(resource.body, arm::kPathActiveOperationId)}));
  bool cancels = active_op && !arm::IsTerminalState(active_op->status);
  if (cancels) {
    ops.push_back(
        WriteOp::Patch(active,
                       {Set(arm::kPathStatus, json::value(arm::kStateCanceled)),
                        Set(arm::kPathLastTransitionTime, json::value(FormatRfc3339(now, true))),
                        Set(arm::kPathError, ErrorJson(arm::kCanceledCode, arm::kSupersededMessage))},
                       {Unchanged(active_doc->body, arm::kPathStatus)}));
    AppendPendingNotification(active, active_op->notification_uri, &ops);
  }
  auto r = store_->Batch(store::kResources, pk, std::move(ops), &*fence);
  if (!r.ok()) {
    if (r.error().IsPreconditionFailed() && !store::FailedBatchIndex(r.error())) {
      ownership_->FenceRefused(*fence);
      ++counters_.fence_refusals;
    } else {
      ++counters_.write_conflicts;  // the next sweep looks again
    }
    return;
  }
  ++counters_.implicit_deletes;
  if (cancels) {
    index_.Remove(pk, active);
    std::string uri = PropertyString(r->documents[2].body, "notificationUri");
    if (!uri.empty()) {
      notifications_.Enqueue(uri, OperationStatusResource(r->documents[2]), pk,
                             arm::PendingNotificationId(active));
    }
  }
  if (auto created = ParseOperation(r->documents[0])) {
    index_.Upsert(*created);
    EnqueueCheck(*created);
  }
}

// ---------------------------------------------------------------------------------------------
// Orphan collection

namespace {

// The href of a listed Cluster Service object ("" when it has neither href nor id).
std::string HrefOfListed(const json::object& o, std::string_view collection) {
  std::string href(GetString(o, "href").value_or(""));
  if (href.empty()) {
    auto id = GetString(o, "id");
    if (id) href = std::string(collection) + "/" + std::string(*id);
  }
  return href;
}

std::string StateOfListed(const json::object& o) {
  std::string state(GetString(o, "state").value_or(""));
  if (const json::object* st = GetObject(o, "status"))
    state = std::string(GetString(*st, "state").value_or(state));
  return state;
}

}  // namespace

Status Backend::KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(doc_type);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& d) {
    std::string href = PropertyString(d.body, "internalId");
    if (!href.empty()) known->insert(std::move(href));
  });
}

bool Backend::CollectIfOrphan(const json::object& listed, std::string_view collection,
                              const std::unordered_set<std::string>& known, TimePoint now,
                              std::set<std::string>* seen, std::vector<OrphanCandidate>* plan) {
  std::string href = HrefOfListed(listed, collection);
  if (href.empty()) return true;
  seen->insert(href);
  if (known.count(href) > 0 || StateOfListed(listed) == "uninstalling") return true;
  TimePoint created;
  auto stamp = ParseRfc3339(GetString(listed, "creation_timestamp").value_or(""));
  {
    std::lock_guard lock(state_mu_);
    TimePoint first_seen = now;
    if (plan == nullptr) {
      first_seen = gc_first_seen_.try_emplace(href, now).first->second;
    } else if (auto it = gc_first_seen_.find(href); it != gc_first_seen_.end()) {
      first_seen = it->second;
    }
    created = stamp.ok() ? std::min(*stamp, first_seen) : first_seen;
  }
  if (plan != nullptr) {
    plan->push_back(OrphanCandidate{href, StateOfListed(listed), created, created + options_.gc_window,
                                    now - created >= options_.gc_window});
    return true;
  }
  if (now - created < options_.gc_window) return true;
  if (!ownership_->Coordinator()) return false;
  Status d = cs_->Delete(href);
  if (d.ok()) {
    ++counters_.gc_deleted;
    logger_.Info("deleted orphan", {{"internalId", href}});
  } else if (!d.error().IsNotFound()) {
    ++counters_.errors;
  }
  return true;
}

void Backend::RunGc() { (void)CollectOrphans(nullptr); }

Status Backend::CollectOrphans(std::vector<OrphanCandidate>* plan) {
  // One backend collects for the whole store.
  if (plan == nullptr && !ownership_->Coordinator()) return Status::Ok();
  // Cluster Service first, documents second: a document is written before its Cluster Service
  // object is created, so every object listed here whose document exists is seen by the query.
  const std::string clusters_href = std::string(clusterservice::kApiPrefix) + "/clusters";
  auto clusters = cs_->List(clusters_href);
  if (!clusters.ok()) return clusters.error();
  std::unordered_set<std::string> known;
  for (std::string& href : index_.InternalIds()) known.insert(std::move(href));
  // Never collect on partial knowledge.
  HCPRP_RETURN_IF_ERROR(KnownInternalIds(arm::kClusterDocType, &known));

  TimePoint now = clock_->Now();
  std::set<std::string> seen;
  std::vector<std::string> kept_clusters;
  for (const json::value& item : *clusters) {
    const json::object* o = item.if_object();
    if (o == nullptr) continue;
    if (!CollectIfOrphan(*o, clusters_href, known, now, &seen, plan)) return Status::Ok();
    std::string href = HrefOfListed(*o, clusters_href);
    if (known.count(href) > 0) kept_clusters.push_back(std::move(href));
  }

  // Node pools of the clusters that have a document: one whose own document is gone is an orphan
  // too (its cluster's deletion would take it, but the cluster lives on).
  std::vector<std::pair<std::string, json::array>> pools;
  for (const std::string& cluster : kept_clusters) {
    std::string collection = cluster + "/node_pools";
    auto listed = cs_->List(collection);
    if (listed.ok()) pools.emplace_back(std::move(collection), std::move(listed).value());
  }
  if (!pools.empty()) {
    if (KnownInternalIds(arm::kNodePoolDocType, &known).ok()) {
      for (const auto& [collection, items] : pools) {
        for (const json::value& item : items) {
          const json::object* o = item.if_object();
          if (o != nullptr && !CollectIfOrphan(*o, collection, known, now, &seen, plan)) return Status::Ok();
        }
      }
    } else {
      // The node pool documents could not be read: collect nothing, keep their first sightings.
      std::lock_guard lock(state_mu_);
      for (const auto& [href, first] : gc_first_seen_) {
        if (href.find("/node_pools/") != std::string::npos) seen.insert(href);
      }
    }
  }

  if (plan != nullptr) return Status::Ok();
  std::lock_guard lock(state_mu_);
  for (auto it = gc_first_seen_.begin(); it != gc_first_seen_.end();) {
    it = seen.count(it->first) > 0 ? std::next(it) : gc_first_seen_.erase(it);
  }
  return Status::Ok();
}

}  // namespace hcprp::backend
