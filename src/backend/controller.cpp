#include "backend/controller.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string_view>
#include <thread>
#include <vector>

#include "arm/documents.h"
#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::backend {

namespace {

constexpr size_t kFeedPage = 500;
constexpr size_t kQueryPage = 1000;

// The resources feed's current end: the continuation that reads only what commits from now on.
Result<std::string> FeedHead(store::Store& store) {
  HCPRP_ASSIGN_OR_RETURN(store::ChangePage head,
                         store.ReadChanges(store::kResources, store::kChangeFeedNow, 1));
  return head.continuation.empty() ? std::string(store::kChangeFeedNow) : head.continuation;
}

// The shard leases, unless the options bring their own Ownership.
std::unique_ptr<Ownership> MakeOwnership(const BackendOptions& options, store::Store* store,
                                         const Clock* clock, const Logger& logger) {
  if (options.ownership != nullptr) return nullptr;
  ShardedLeaseOptions lo;
  lo.owner = options.owner;
  lo.ttl = options.lease_ttl;
  lo.shards = options.shards;
  return std::make_unique<ShardedLeases>(lo, store, clock, logger);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction, threads

Controller::Controller(BackendOptions options, store::Store* store, clusterservice::Client* cs,
                       const Clock* clock, Logger logger, Notifier* notifier)
    : options_(std::move(options)),
      store_(store),
      clock_(clock),
      logger_(std::move(logger)),
      owned_ownership_(MakeOwnership(options_, store_, clock_, logger_)),
      ownership_(options_.ownership != nullptr ? options_.ownership : owned_ownership_.get()),
      versions_(store_, cs, ownership_, &counters_, &logger_, options_.version_resync,
                options_.version_concurrency, options_.version_write_concurrency),
      notifications_(
          options_.notifications, notifier, clock, logger_.WithComponent("backend.notifier"),
          [this](const std::string& pk, const std::string& id) {
            Status s = store_->Delete(store::kResources, pk, id);
            if (!s.ok() && !s.error().IsNotFound()) {
              logger_.Warn("pending notification not removed", {{"id", id}, {"error", s.error().ToString()}});
            }
          }),
      writer_(&options_, store_, ownership_, clock_, &logger_, &index_, &memo_, &notifications_, &counters_,
              {[this](const OperationRecord& op) { checks_.Enqueue(op); }, [this] { WakeNotifierLoop(); }}),
      conditions_(store_, cs, ownership_, &counters_, &logger_, UpgradeHistogram(options_.metrics)),
      checks_(&options_, store_, cs, ownership_, clock_, &logger_, &index_, &memo_, &writer_, &conditions_,
              &counters_, [this] { WakeTimerLoop(); }),
      late_(store_, cs, ownership_, clock_, &logger_, &counters_),
      events_(&options_, store_, cs, clock_, &index_, &checks_, &late_, &writer_, &conditions_, &versions_,
              &counters_, EventToCommitHistogram(options_.metrics)),
      orphans_({options_.gc_window, options_.gc_interval}, store_, cs, ownership_, &index_, &events_,
               &writer_, clock_, &logger_, &counters_),
      sweeper_({options_.sweep_page_size, options_.resync_interval}, store_, ownership_, clock_, &logger_,
               &counters_,
               [this](const store::Document& resource) { writer_.EnsureDeleteOperation(resource); }),
      steering_(&options_, store_, ownership_, &logger_, &index_, &writer_, &checks_, &orphans_) {}

Result<std::unique_ptr<Controller>> Controller::Create(BackendOptions options, store::Store* store,
                                                       clusterservice::Client* cs, const Clock* clock,
                                                       Logger logger, Notifier* notifier) {
  if (store == nullptr || cs == nullptr || clock == nullptr) {
    return Error::InvalidArgument("backend needs a store, a Cluster Service client and a clock");
  }
  if (options.lease_ttl.count() < 3) return Error::InvalidArgument("lease_ttl too short");
  if (options.owner.empty()) options.owner = "backend-" + NewUuidV4();
  if (options.notifications.max_attempts < 1) options.notifications.max_attempts = 1;
  // Start the change feed after everything committed so far; the first resync reads the rest.
  HCPRP_ASSIGN_OR_RETURN(auto head, FeedHead(*store));
  std::unique_ptr<Controller> b(
      new Controller(std::move(options), store, cs, clock, std::move(logger), notifier));
  {
    MutexLock lock(b->feed_mu_);
    b->feed_continuation_ = std::move(head);
  }
  if (b->options_.metrics != nullptr) b->RegisterMetrics(*b->options_.metrics);
  return b;
}

void Controller::WakeTimerLoop() {
  {
    MutexLock lock(run_mu_);
    wake_ = true;
  }
  run_cv_.NotifyAll();
}

void Controller::WakeNotifierLoop() {
  {
    MutexLock lock(run_mu_);
    notify_wake_ = true;
  }
  run_cv_.NotifyAll();
}

Controller::~Controller() { Stop(); }

Status Controller::Start() {
  MutexLock lock(run_mu_);
  if (!threads_.empty()) return Error::InvalidArgument("backend already started");
  stopping_ = false;
  threads_.emplace_back([this] { FeedLoop(); });
  threads_.emplace_back([this] { EventLoop(); });
  threads_.emplace_back([this] { TimerLoop(); });
  threads_.emplace_back([this] { LeaseLoop(); });
  threads_.emplace_back([this] { NotifierLoop(); });
  if (options_.gc_enabled) threads_.emplace_back([this] { GcLoop(); });
  threads_.emplace_back([this] { versions_.Run(); });
  return Status::Ok();
}

void Controller::Stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(run_mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  run_cv_.NotifyAll();
  versions_.Stop();
  for (auto& t : threads) t.join();
  ownership_->Release();
}

void Controller::WaitFor(std::chrono::milliseconds d) {
  MutexLock lock(run_mu_);
  run_cv_.WaitFor(lock, d, [this]() HCPRP_REQUIRES(run_mu_) { return stopping_; });
}

void Controller::FeedLoop() {
  while (true) {
    {
      MutexLock lock(run_mu_);
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
      MutexLock lock(feed_mu_);
      continuation = feed_continuation_;
    }
    auto waited = store_->WaitForChanges(store::kResources, continuation, options_.feed_wait);
    if (!waited.ok()) WaitFor(options_.feed_wait);
  }
}

void Controller::EventLoop() {
  bool positioned = false;
  bool resumed = false;
  bool settled = false;
  while (true) {
    {
      MutexLock lock(run_mu_);
      if (stopping_) break;
    }
    if (!positioned) {
      // At once, before anything is missed: where an earlier run left off, else the newest.
      auto r = events_.Resume();
      if (!r.ok()) {
        WaitFor(r.error().Is(ErrorCode::kUnavailable) ? options_.event_retry : options_.event_wait);
        continue;
      }
      positioned = true;
      resumed = *r;
      settled = false;
      continue;
    }
    if (!settled) {
      settled = SettleEvents(resumed);
      continue;
    }
    auto n = events_.PumpOnce(options_.event_wait);
    if (!n.ok() && n.error().IsPreconditionFailed()) {
      positioned = false;  // the stream lost our place: position again, then resync
      continue;
    }
    if (!n.ok()) {
      WaitFor(n.error().Is(ErrorCode::kUnavailable) ? options_.event_retry : options_.event_wait);
      continue;
    }
    events_.SavePlace(false);
  }
  // Not before the listing that a new position calls for: a restart would then skip it.
  if (positioned && settled) events_.SavePlace(true);
}

bool Controller::SettleEvents(bool resumed) {
  // Events are applied to owned partitions only: wait for the first shard before applying the
  // history an earlier run missed, or listing what it cannot tell.
  // The first tick that gained shards has taken all it will (Active() is true from the first one).
  auto owning = [this] { return shards_taken_ && ownership_->Active(); };
  if (!owning()) {
    MutexLock lock(run_mu_);  // OwnershipChanged() wakes it
    run_cv_.WaitFor(lock, options_.event_wait,
                    [&]() HCPRP_REQUIRES(run_mu_) { return stopping_ || owning(); });
    return false;
  }
  if (!resumed) {
    // Positioned at the stream's newest: what changed before is read from the objects themselves,
    // at once (the resync requested below checks the operations in flight). The releases announced
    // before are read from the update service by a version pass: the positioning may have passed
    // over an announcement made after the last pass read the graph (while it read the stream's
    // history), and nothing else would start one before the version resync.
    versions_.Request();
    if (Status s = conditions_.SyncListed(); !s.ok()) {
      logger_.Warn("listing the Cluster Service after the event stream's history was lost failed",
                   {{"error", s.error().ToString()}});
      events_.MarkInterrupted();
      WaitFor(options_.event_wait);
      return false;
    }
  }
  resync_requested_ = true;
  WakeTimerLoop();
  // What a store restored from an older copy lacks or keeps too long is found at once (divergence.h).
  orphans_.RequestPass();
  return true;
}

void Controller::TimerLoop() {
  while (true) {
    Step(false);
    MutexLock lock(run_mu_);
    if (stopping_) return;
    auto wait = std::min(options_.tick, ownership_->RenewInterval());
    run_cv_.WaitFor(lock, wait, [this]() HCPRP_REQUIRES(run_mu_) { return stopping_ || wake_; });
    wake_ = false;
    if (stopping_) return;
  }
}

void Controller::LeaseLoop() {
  while (true) {
    if (ownership_->Tick()) {
      OwnershipChanged();
      WakeTimerLoop();
    }
    MutexLock lock(run_mu_);
    if (stopping_) return;
    run_cv_.WaitFor(lock, ownership_->NextTickIn(), [this]() HCPRP_REQUIRES(run_mu_) { return stopping_; });
    if (stopping_) return;
  }
}

void Controller::GcLoop() {
  // Apart from the timer loop: a pass lists every Cluster Service object, which must not hold up
  // the checks of operations.
  while (true) {
    if (options_.gc_enabled) orphans_.MaybeRun(false);
    MutexLock lock(run_mu_);
    if (stopping_) return;
    run_cv_.WaitFor(lock, options_.tick, [this]() HCPRP_REQUIRES(run_mu_) { return stopping_; });
    if (stopping_) return;
  }
}

void Controller::NotifierLoop() {
  while (true) {
    notifications_.Deliver();
    auto next = notifications_.NextDueIn();
    std::chrono::milliseconds wait = options_.tick;
    if (next.has_value()) {
      wait = std::min(
          wait, std::chrono::duration_cast<std::chrono::milliseconds>(*next) + std::chrono::milliseconds(1));
    }
    MutexLock lock(run_mu_);
    if (stopping_) return;
    run_cv_.WaitFor(lock, wait, [this]() HCPRP_REQUIRES(run_mu_) { return stopping_ || notify_wake_; });
    notify_wake_ = false;
    if (stopping_) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Steps

Status Controller::ReconcileOnce() {
  HCPRP_RETURN_IF_ERROR(PumpChangesOnce());
  resync_requested_ = true;
  Step(true);
  if (!ownership_->Active()) return Error::Conflict("other backends own every shard of the store");
  notifications_.Deliver();
  return Status::Ok();
}

Result<size_t> Controller::PumpChangesOnce() {
  MutexLock lock(feed_mu_);
  size_t total = 0;
  while (true) {
    auto page = store_->ReadChanges(store::kResources, feed_continuation_, kFeedPage);
    if (!page.ok() && page.error().Is(ErrorCode::kOutOfRange)) {
      // Retention removed changes this backend had not read (it was away longer than the store
      // keeps them): start again from now and rebuild the index from the documents.
      logger_.Warn("change feed position expired: resynchronising", {{"error", page.error().ToString()}});
      HCPRP_ASSIGN_OR_RETURN(auto head, FeedHead(*store_));
      feed_continuation_ = std::move(head);
      resync_requested_ = true;
      WakeTimerLoop();
      continue;
    }
    if (!page.ok()) return page.error();
    if (!page->changes.empty()) {
      const int64_t now_ms = ToUnixMillis(clock_->Now());
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

BackendStats Controller::Stats() const {
  BackendStats s;
  s.active = ownership_->Active();
  s.shards_held = ownership_->HeldShards();
  s.events_available = events_.Available();
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
  s.recovered_updates = counters_.recovered_updates;
  s.implicit_deletes = counters_.implicit_deletes;
  s.resources_deleted = counters_.resources_deleted;
  s.gc_deleted = counters_.gc_deleted;
  s.gc_held = counters_.gc_held;
  s.fence_refusals = counters_.fence_refusals;
  s.write_conflicts = counters_.write_conflicts;
  s.errors = counters_.errors;
  s.idle_condition_syncs = counters_.idle_condition_syncs;
  NotificationCounters n = notifications_.Counters();
  s.notifications_sent = n.sent;
  s.notification_failures = n.failed_attempts;
  s.notifications_dropped = n.dropped;
  s.notifications_pending = notifications_.Pending();
  s.checks_queued = checks_.Queued();
  s.checks_running = counters_.checks_running;
  s.sweeps_active = sweeper_.Active();
  s.sweeps_finished = counters_.sweeps_finished;
  s.feed_lag_seconds = feed_lag_seconds_.load();
  return s;
}

void Controller::OwnershipChanged() {
  resync_requested_ = true;
  load_subscriptions_requested_ = true;
  versions_.RequestResync();  // the clusters of the partitions it now owns
  shards_taken_ = true;
  // The event loop waits for shards: it saw the old ownership and waits, or sees the new one.
  { MutexLock lock(run_mu_); }
  run_cv_.NotifyAll();
}

void Controller::Step(bool exhaustive) {
  MutexLock pass(pass_mu_);
  if (ownership_->Tick()) OwnershipChanged();
  if (!ownership_->Active()) return;
  const TimePoint now = clock_->Now();
  LoadIfRequested();
  ResyncOrPoll(now, exhaustive);

  checks_.ApplyDeadlines();
  checks_.EnqueueUnconfirmed();
  std::atomic<size_t> delete_budget{exhaustive ? std::numeric_limits<size_t>::max()
                                               : options_.max_cs_deletes_per_step};
  size_t check_budget = exhaustive ? std::numeric_limits<size_t>::max() : options_.max_checks_per_step;
  StatusChecks::Drained drained = checks_.Drain(check_budget, &delete_budget, events_.Available());
  sweeper_.Run(exhaustive);
  if (exhaustive) drained = checks_.Drain(check_budget, &delete_budget, events_.Available());
  if (drained == StatusChecks::Drained::kBudgetSpent) {
    WakeTimerLoop();  // more checks are due now: the next step need not wait for the tick
  }

  if (exhaustive && options_.gc_enabled)
    orphans_.MaybeRun(true);  // a running backend collects on its own thread (GcLoop)
}

void Controller::LoadIfRequested() {
  if (!load_subscriptions_requested_.exchange(false)) return;
  if (Status s = LoadPendingNotifications(); !s.ok()) {
    ++counters_.errors;
    load_subscriptions_requested_ = true;
  }
  if (Status s = LoadDeletedSubscriptions(); !s.ok()) {
    ++counters_.errors;
    load_subscriptions_requested_ = true;
  }
}

void Controller::ResyncOrPoll(TimePoint now, bool exhaustive) {
  const bool requested = resync_requested_.exchange(false);
  const bool resync = requested || now >= next_resync_;
  bool poll = false;
  if (now >= next_poll_) {
    poll = true;
    next_poll_ = now + options_.poll_interval;
  }
  if (resync) {
    // A periodic resync while the event stream delivered every page since the previous one needs to
    // check only what events cannot cover; at least every options_.full_check_every-th checks everything.
    const bool interrupted = events_.TakeInterrupted();
    const bool check_all = requested || exhaustive || interrupted || !events_.Available() ||
                           ++resyncs_since_full_check_ >= options_.full_check_every;
    if (check_all) resyncs_since_full_check_ = 0;
    if (Status s = RebuildIndex(check_all); s.ok()) {
      ++counters_.full_resyncs;
      next_resync_ = now + options_.resync_interval;
    } else {
      ++counters_.errors;
      resync_requested_ = true;
      if (check_all) events_.MarkInterrupted();
      logger_.Warn("resync failed", {{"error", s.error().ToString()}});
    }
  } else if (poll) {
    const bool events = events_.Available();
    for (const OperationRecord& op : index_.All()) {
      if (!events || !checks_.EventsCover(op)) checks_.Enqueue(op);
    }
  }
}

Status Controller::RebuildIndex(bool check_all) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kOperationDocType);
  q.non_terminal_only = true;
  q.max_items = kQueryPage;
  std::set<std::pair<std::string, std::string>> found_new;  // not indexed before, or a new internal ID
  HCPRP_RETURN_IF_ERROR(store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (!ownership_->FenceFor(doc.partition_key)) return;  // another backend's shard
    auto op = ParseOperation(doc);
    if (op && !arm::IsTerminalState(op->status) && index_.Upsert(*op) && !check_all)
      found_new.insert({op->partition_key, op->id});
  }));
  // Entries of shards given up leave the index; entries the query no longer returns are dropped
  // when their check re-reads them.
  const bool events = events_.Available();
  for (const OperationRecord& op : index_.All()) {
    if (!ownership_->FenceFor(op.partition_key)) {
      index_.Remove(op.partition_key, op.id);
      continue;
    }
    if (check_all || !events || !checks_.EventsCover(op) || found_new.count({op.partition_key, op.id}) > 0)
      checks_.Enqueue(op);
  }
  return Status::Ok();
}

void Controller::QueuePendingNotification(const store::Document& seen) {
  if (notifications_.Contains(seen.partition_key, seen.id)) return;
  // Read it again: a change feed entry may be of a notification delivered (and removed) since.
  auto fresh = store_->Read(store::kResources, seen.partition_key, seen.id);
  if (!fresh.ok()) return;
  const store::Document& pending = *fresh;
  auto owed = ParsePendingNotification(pending.body);
  if (!owed) return;  // not one this version wrote: left to its time to live
  auto op = store_->Read(store::kResources, pending.partition_key, owed->operation_id);
  if (!op.ok()) {
    // Delivered meanwhile (the document is gone too), or the operation expired: nothing to send.
    if (op.error().IsNotFound()) (void)store_->Delete(store::kResources, pending.partition_key, pending.id);
    return;
  }
  if (owed->uri.empty() ||
      !notifications_.Enqueue(owed->uri, OperationStatusResource(*op), pending.partition_key, pending.id))
    return;
  WakeNotifierLoop();
}

Status Controller::LoadPendingNotifications() {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kPendingNotificationDocType);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (ownership_->FenceFor(doc.partition_key)) QueuePendingNotification(doc);
  });
}

Status Controller::LoadDeletedSubscriptions() {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kSubscriptionDocType);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& doc) {
    if (IsDeletedSubscription(doc)) sweeper_.OnDeleted(doc.partition_key);
  });
}

void Controller::HandleChange(const store::Change& change) {
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
    if (index_.Upsert(*op)) checks_.Enqueue(*op);
    return;
  }
  if (change.kind != store::Change::Kind::kDelete && change.kind != store::Change::Kind::kExpire &&
      IsDeletedSubscription(doc)) {
    sweeper_.OnDeleted(doc.partition_key);
    WakeTimerLoop();
  }
}

}  // namespace hcprp::backend
