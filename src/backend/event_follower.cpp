#include "backend/event_follower.h"

#include <algorithm>
#include <latch>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace hcprp::backend {

uint64_t EventFollower::After() const {
  MutexLock lock(mu_);
  return after_;
}

void EventFollower::Advance(uint64_t last) {
  MutexLock lock(mu_);
  after_ = std::max(after_, last);
}

namespace {

// The sequence a page reads up to: the next read continues after it.
uint64_t EndOf(const clusterservice::EventPage& page) {
  uint64_t last = page.last_sequence;
  for (const clusterservice::Event& e : page.events) last = std::max(last, e.sequence);
  return last;
}

}  // namespace

Status EventFollower::Position() {
  while (true) {
    auto page = cs_->WatchEvents(After(), std::chrono::milliseconds(0));
    if (!page.ok() && page.error().IsPreconditionFailed()) {
      // The stream no longer holds that sequence (the service restarted, or this reader fell too far
      // behind): start from its newest; the resync that follows reads the current states.
      page = cs_->WatchEvents(clusterservice::kLatestEvents, std::chrono::milliseconds(0));
    }
    if (!page.ok()) {
      available_ = false;
      interrupted_ = true;
      return page.error();
    }
    Advance(EndOf(*page));
    if (page->events.empty()) break;
  }
  available_ = true;
  interrupted_ = true;
  return Status::Ok();
}

namespace {

// Next to the shard leases' records (ShardedLeaseOptions::partition_key).
constexpr std::string_view kPlacePartition = "hcprp-backend";
constexpr std::string_view kPlacePrefix = "events-";
// A place not saved for this long (its backend gone) is dropped; a backend that finds none resyncs.
constexpr int64_t kPlaceTtlSeconds = 7 * 24 * 3600;
constexpr std::chrono::seconds kSaveEvery{1};

}  // namespace

Status EventFollower::ReadGap() {
  const TimePoint start = clock_->Now();
  {
    MutexLock lock(mu_);
    if (gap_read_) return Status::Ok();
  }
  store::QueryOptions q;
  q.container = std::string(store::kLocks);
  q.partition_key = std::string(kPlacePartition);
  q.max_items = 500;
  std::vector<store::Document> places;
  HCPRP_RETURN_IF_ERROR(store::ForEachDocument(*store_, q, [&](const store::Document& d) {
    if (d.id.starts_with(kPlacePrefix)) places.push_back(d);
  }));
  std::optional<RestoreGap> gap = RestoreGapOf(places, start);
  MutexLock lock(mu_);
  gap_read_ = true;
  gap_ = gap;
  return Status::Ok();
}

std::optional<RestoreGap> EventFollower::Gap() const {
  MutexLock lock(mu_);
  return gap_;
}

Result<bool> EventFollower::Resume() {
  // Before this backend saves a place of its own.
  HCPRP_RETURN_IF_ERROR(ReadGap());
  if (!resume_tried_) {
    auto saved = store_->Read(store::kLocks, kPlacePartition, std::string(kPlacePrefix) + options_->owner);
    if (!saved.ok() && !saved.error().IsNotFound()) return saved.error();
    std::optional<int64_t> after;
    if (saved.ok()) after = GetInt(saved->body.as_object(), "after");
    if (after && *after > 0) {
      // Whether the stream still reaches back there: if not, position at once.
      auto probe = cs_->WatchEvents(static_cast<uint64_t>(*after), std::chrono::milliseconds(0));
      if (!probe.ok() && !probe.error().IsPreconditionFailed()) {
        if (probe.error().Is(ErrorCode::kUnavailable)) available_ = false;
        return probe.error();
      }
      resume_tried_ = true;
      if (probe.ok()) {
        Advance(static_cast<uint64_t>(*after));
        saved_after_ = static_cast<uint64_t>(*after);
        available_ = true;
        interrupted_ = true;
        return true;
      }
    }
    resume_tried_ = true;
  }
  HCPRP_RETURN_IF_ERROR(Position());
  return false;
}

void EventFollower::SavePlace(bool force) {
  const uint64_t after = After();
  const auto now = std::chrono::steady_clock::now();
  if (after == saved_after_ || (!force && now - saved_at_ < kSaveEvery)) return;
  json::object body{
      {"kind", "backendEventPlace"}, {"owner", options_->owner}, {"after", static_cast<int64_t>(after)}};
  auto written = store_->Upsert(store::kLocks, kPlacePartition, std::string(kPlacePrefix) + options_->owner,
                                json::value(std::move(body)), std::nullopt, kPlaceTtlSeconds);
  if (!written.ok()) return;  // the next call tries again; a restart meanwhile re-applies more
  saved_after_ = after;
  saved_at_ = now;
}

Result<clusterservice::EventPage> EventFollower::NextPage(std::chrono::milliseconds wait) {
  const uint64_t after = After();
  if (prefetch_) {
    // Read while the page it follows was applied (PumpOnce waited for it); taken when it is still the
    // next page and holds events (an empty or failed read is made again, with the wait).
    Prefetch p = std::move(*prefetch_);
    prefetch_.reset();
    if (p.after == after) {
      auto page = p.page.get();
      if (page.ok() && !page->events.empty()) return page;
    }
  }
  return cs_->WatchEvents(after, wait);
}

void EventFollower::PrefetchAfter(const clusterservice::EventPage& page) {
  if (page.events.empty()) return;  // nothing came: the next read long-polls
  const uint64_t last = EndOf(page);
  prefetch_ = Prefetch{last, std::async(std::launch::async, [this, last] {
                         return cs_->WatchEvents(last, std::chrono::milliseconds(0));
                       })};
}

Result<size_t> EventFollower::PumpOnce(std::chrono::milliseconds wait) {
  auto page = NextPage(wait);
  if (!page.ok()) {
    if (page.error().Is(ErrorCode::kUnavailable)) available_ = false;
    interrupted_ = true;
    return page.error();
  }
  available_ = true;
  PrefetchAfter(*page);
  ApplyEvents(page->events);
  Advance(EndOf(*page));
  // The next page was read while this one was applied (it is short: no wait); a call returns once
  // both are done, so that the next call starts from a read already made.
  if (prefetch_) prefetch_->page.wait();
  return page->events.size();
}

namespace {

// The Cluster Service object tree an event belongs to: the cluster's href for the cluster, its node
// pools and its credentials.
std::string_view ClusterTreeOf(std::string_view href) {
  for (std::string_view sub : {"/node_pools/", "/break_glass_credentials"}) {
    if (size_t cut = href.find(sub); cut != std::string_view::npos) return href.substr(0, cut);
  }
  return href;
}

}  // namespace

std::vector<bool> SupersededInPage(const std::vector<const clusterservice::Event*>& events) {
  std::vector<bool> superseded(events.size(), false);
  std::unordered_set<std::string_view> later;
  for (size_t i = events.size(); i-- > 0;) {
    superseded[i] = !later.insert(events[i]->href).second;
  }
  return superseded;
}

void EventFollower::ApplyEvents(const std::vector<clusterservice::Event>& events) {
  // Events of one cluster tree, in stream order.
  std::vector<std::vector<const clusterservice::Event*>> groups;
  std::unordered_map<std::string_view, size_t> group_of;
  for (const clusterservice::Event& e : events) {
    auto [it, added] = group_of.try_emplace(ClusterTreeOf(e.href), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&e);
  }
  auto apply_group = [this](const std::vector<const clusterservice::Event*>& group) {
    const std::vector<bool> superseded = SupersededInPage(group);
    for (size_t i = 0; i < group.size(); ++i) ApplyEvent(*group[i], superseded[i]);
  };
  std::latch applied(static_cast<std::ptrdiff_t>(groups.size()));
  for (const auto& group : groups) {
    auto task = [&] {
      apply_group(group);
      applied.count_down();
    };
    if (!apply_pool_.Submit(task)) task();  // the pool is shutting down
  }
  applied.wait();
}

void EventFollower::ApplyEvent(const clusterservice::Event& event, bool superseded) {
  const auto received = std::chrono::steady_clock::now();
  ++counters_->events_received;
  if (event.kind == clusterservice::kVersionEventKind ||
      event.kind == clusterservice::kUpgradeEdgeEventKind) {
    versions_->Request();  // the update service changed: every cluster's desired version may rise
    return;
  }
  versions_->Observe(event);
  std::vector<OperationRecord> ops = index_->ByInternalId(event.href);
  if (ops.empty() && checks_->FindCreateOfEvent(event)) ops = index_->ByInternalId(event.href);
  if (ops.empty()) {
    if (late_->CollectIfLate(event, Gap())) return;
    FollowIdleDelete(event);
    // A later event of the page carries the object's newer status: only that one is copied.
    if (!superseded) conditions_->SyncIdle(event);
    return;
  }
  ++counters_->events_applied;
  json::object fields = clusterservice::SyncedStatusFields(event.object.status);
  Observation obs = ObservationFrom(event.object.status);
  obs.state = event.state;
  obs.gone = event.Deleted();
  // The object's conditions go to the resource of its first (non-credential) operation: one resource
  // per Cluster Service object. With the transition they cause, in its batch; else on their own.
  std::optional<SeenConditions> seen;
  if (!fields.empty() && !obs.gone) seen = SeenConditions{event.href, std::move(fields)};
  const OperationRecord* conditions_owner = nullptr;
  bool conditions_committed = false;
  for (const OperationRecord& op : ops) {
    if (op.request == Request::kRequestCredential || op.request == Request::kRevokeCredentials) {
      checks_->Enqueue(op);
      continue;
    }
    const bool owner = conditions_owner == nullptr;
    if (owner) conditions_owner = &op;
    ObjectKind kind = KindOfHref(event.href);
    if (op.request == Request::kUpdate) {
      // An update starts from a ready object, so a "ready" (or "error") still in the event stream
      // from before the update would end it at once: an update ends only on a fresh status read.
      auto t = Decide(op.request, kind, obs);
      if (t && arm::IsTerminalState(t->status)) {
        checks_->Enqueue(op);
        continue;
      }
    }
    Outcome o = writer_->Transit(
        op.partition_key, op.id, [&](const OperationRecord& cur) { return Decide(cur.request, kind, obs); },
        owner && seen ? &*seen : nullptr, owner ? &conditions_committed : nullptr);
    if (o == Outcome::kNoChange) checks_->RecordFound(op);  // a found object that no status change recorded
    if (o == Outcome::kApplied && event_to_commit_ != nullptr) {
      event_to_commit_->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - received).count());
    }
    // The store refused (down or restarting): the event is consumed, so check the status again later.
    if (o == Outcome::kError) checks_->Enqueue(op);
    if (op.request == Request::kDelete && !obs.gone && obs.state != "uninstalling") checks_->Enqueue(op);
  }
  if (seen && conditions_owner != nullptr && !conditions_committed) {
    conditions_->Sync(conditions_owner->partition_key, conditions_owner->external_id, event.href,
                      seen->fields);
  }
}

void EventFollower::FollowIdleDelete(const clusterservice::Event& event) {
  if (event.Deleted() || event.state != "uninstalling") return;  // a deleted event names no resource
  std::optional<arm::ResourceId> id = ResourceIdOfObject(*cs_, event.href, event.object);
  if (!id) return;
  const std::string pk = arm::PartitionKey(id->subscription_id);
  auto found = FindResource(*store_, pk, id->ToString());
  if (!found.ok() || !found->has_value()) return;
  auto doc = arm::ResourceDocument::FromBody((*found)->body);
  if (!doc.ok() || !FollowsServiceDelete(*doc, event.href, event.state, false)) return;
  writer_->EnsureDeleteOperation(**found);
}

}  // namespace hcprp::backend
