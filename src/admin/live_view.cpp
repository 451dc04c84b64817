#include "admin/live_view.h"

#include <algorithm>

#include "arm/documents.h"
#include "clusterservice/event.h"
#include "core/time.h"

namespace hcprp::admin {

namespace {

std::string Key(std::string_view pk, std::string_view id) { return std::string(pk) + "/" + std::string(id); }

std::string Prop(const json::object& props, std::string_view name) {
  return std::string(GetString(props, name).value_or(""));
}

// "cluster", "nodePool" or "externalAuth" for a resource document type ("" for others).
std::string KindOf(std::string_view doc_type) {
  if (doc_type == arm::kClusterDocType) return "cluster";
  if (doc_type == arm::kNodePoolDocType) return "nodePool";
  if (doc_type == arm::kExternalAuthDocType) return "externalAuth";
  return "";
}

// Segment after `word` (case-insensitive) in a resource ID.
std::string SegmentAfter(std::string_view id, std::string_view word) {
  std::string lower = ToLower(id);
  std::string needle = "/" + ToLower(word) + "/";
  size_t at = lower.find(needle);
  if (at == std::string::npos) return "";
  size_t start = at + needle.size();
  size_t end = id.find('/', start);
  return std::string(id.substr(start, end == std::string_view::npos ? id.size() - start : end - start));
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

TimePoint TimeOf(const json::object& props, std::string_view name, TimePoint fallback) {
  auto t = ParseRfc3339(GetString(props, name).value_or(""));
  return t.ok() ? *t : fallback;
}

json::array Conditions(const json::object& props) {
  const json::object* status = GetObject(props, "clusterServiceStatus");
  if (status == nullptr) return {};
  const json::array* conditions = GetArray(*status, "conditions");
  if (conditions == nullptr) return {};
  json::array out;
  for (const json::value& c : *conditions) {
    const json::object* o = c.if_object();
    if (o == nullptr) continue;
    json::object v;
    for (std::string_view k : {"type", "status", "reason", "message", "lastTransitionTime"}) {
      if (auto s = GetString(*o, k)) v[k] = *s;
    }
    out.push_back(std::move(v));
  }
  return out;
}

// What a cluster or node pool runs (status.activeVersions: two entries while an upgrade runs) and the
// version its owner asked for (version.id).
json::array ActiveVersions(const json::object& props) {
  const json::object* status = GetObject(props, "clusterServiceStatus");
  const json::array* history = status != nullptr ? GetArray(*status, "version_history") : nullptr;
  json::array out;
  if (history == nullptr) return out;
  for (const json::value& v : clusterservice::ActiveVersions(*history)) {
    out.push_back(json::value(GetString(v.as_object(), "version").value_or("")));
  }
  return out;
}

std::string DesiredVersion(const json::object& props) {
  const json::object* resource = GetObject(props, "resource");
  const json::object* inner = resource != nullptr ? GetObject(*resource, "properties") : nullptr;
  const json::object* version = inner != nullptr ? GetObject(*inner, "version") : nullptr;
  return version != nullptr ? std::string(GetString(*version, "id").value_or("")) : std::string();
}

bool Matches(const json::object& view, const ListQuery& q) {
  if (!q.type.empty() && Prop(view, "type") != q.type) return false;
  if (!q.subscription.empty() && !EqualsIgnoreCase(Prop(view, "subscription"), q.subscription)) return false;
  if (!q.search.empty() && ToLower(Prop(view, "id")).find(ToLower(q.search)) == std::string::npos)
    return false;
  return true;
}

}  // namespace

LiveView::LiveView(LiveViewOptions options, store::Store* store, const Clock* clock, Logger logger)
    : options_(std::move(options)), store_(store), clock_(clock), logger_(std::move(logger)) {}

Result<std::unique_ptr<LiveView>> LiveView::Start(LiveViewOptions options, store::Store* store,
                                                  const Clock* clock, Logger logger) {
  if (store == nullptr || clock == nullptr)
    return Error::InvalidArgument("live view needs a store and a clock");
  std::unique_ptr<LiveView> v(new LiveView(std::move(options), store, clock, std::move(logger)));
  if (v->options_.metrics != nullptr && v->options_.operation_metrics)
    v->RegisterMetrics(*v->options_.metrics);
  if (v->options_.start_thread) {
    // The scan reads every document of the store (seconds at 100,000 resources): the reader thread
    // makes it, so that the process it runs in starts at once; the console fills as it goes.
    v->thread_ = std::thread([p = v.get()] { p->LoadThenRun(); });
  } else {
    HCPRP_RETURN_IF_ERROR(v->Load());
  }
  return v;
}

void LiveView::LoadThenRun() {
  while (true) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = Load();
    if (s.ok()) {
      logger_.Info(
          "console model loaded",
          {{"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}});
      break;
    }
    MutexLock lock(mu_);
    resources_.clear();
    resource_docs_.clear();
    subscriptions_.clear();
    operations_.clear();
    if (stopping_) return;
    logger_.Warn("console scan failed", {{"error", s.error().ToString()}});
    if (cv_.WaitFor(lock, options_.feed_wait, [&]() HCPRP_REQUIRES(mu_) { return stopping_; })) return;
  }
  Run();
}

LiveView::~LiveView() { Stop(); }

void LiveView::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

Status LiveView::Load() {
  // The feed position first: a change committed during the scan is applied again afterwards, which
  // converges on the same model.
  ++store_calls_;
  HCPRP_ASSIGN_OR_RETURN(auto head, store_->ReadChanges(store::kResources, store::kChangeFeedNow, 1));
  continuation_ = head.continuation.empty() ? std::string(store::kChangeFeedNow) : head.continuation;
  std::string partitions_after;
  do {
    ++store_calls_;
    HCPRP_ASSIGN_OR_RETURN(auto parts,
                           store_->ListPartitions(store::kResources, options_.page_size, partitions_after));
    for (const store::Document& p : parts.documents) {
      store::QueryOptions q;
      q.container = std::string(store::kResources);
      q.partition_key = p.partition_key;
      q.max_items = options_.page_size;
      do {
        ++store_calls_;
        HCPRP_ASSIGN_OR_RETURN(auto page, store_->Query(q));
        MutexLock lock(mu_);
        if (stopping_) return Error::Canceled("the live view is stopping");
        for (const store::Document& d : page.documents) Apply(d, false, false, true);
        q.continuation = page.continuation;
      } while (!q.continuation.empty());
    }
    partitions_after = parts.continuation;
  } while (!partitions_after.empty());
  return Status::Ok();
}

Result<size_t> LiveView::PumpOnce() {
  size_t total = 0;
  while (true) {
    ++store_calls_;
    auto page = store_->ReadChanges(store::kResources, continuation_, options_.page_size);
    if (!page.ok() && page.error().Is(ErrorCode::kOutOfRange)) {
      // Changes were removed before they were read: start again from a fresh scan.
      {
        MutexLock lock(mu_);
        resources_.clear();
        resource_docs_.clear();
        subscriptions_.clear();
        operations_.clear();
        ring_.clear();
        ring_.emplace_back(next_event_++, R"({"kind":"reset"})");
      }
      HCPRP_RETURN_IF_ERROR(Load());
      cv_.NotifyAll();
      continue;
    }
    if (!page.ok()) return page.error();
    if (!page->changes.empty()) {
      MutexLock lock(mu_);
      for (const store::Change& c : page->changes) {
        bool deleted = c.kind == store::Change::Kind::kDelete || c.kind == store::Change::Kind::kExpire;
        // Every document met here was written after the view loaded: a create the feed no longer
        // lists (superseded by a later version before this read) arrives as a replace.
        Apply(c.document, deleted, /*is_new=*/true, false);
      }
    }
    if (!page->continuation.empty()) continuation_ = page->continuation;
    total += page->changes.size();
    if (!page->changes.empty()) cv_.NotifyAll();
    if (page->changes.size() < options_.page_size) break;
  }
  return total;
}

void LiveView::Run() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    ++store_calls_;
    auto more = store_->WaitForChanges(store::kResources, continuation_, options_.feed_wait);
    if (!more.ok()) {
      MutexLock lock(mu_);
      cv_.WaitFor(lock, options_.feed_wait, [&]() HCPRP_REQUIRES(mu_) { return stopping_; });
      continue;
    }
    if (!*more) continue;
    if (auto n = PumpOnce(); !n.ok()) {
      logger_.Warn("console feed read failed", {{"error", n.error().ToString()}});
      MutexLock lock(mu_);
      cv_.WaitFor(lock, options_.feed_wait, [&]() HCPRP_REQUIRES(mu_) { return stopping_; });
    }
  }
}

void LiveView::Emit(std::string kind, std::string change, const json::object& item) {
  json::object e{{"kind", std::move(kind)}, {"change", std::move(change)}, {"item", item}};
  ring_.emplace_back(next_event_++, json::serialize(e));
  while (ring_.size() > options_.event_ring) ring_.pop_front();
}

json::object LiveView::OpJson(const Op& op) const {
  json::object v = op.view;
  json::array timeline;
  for (size_t i = 0; i < op.timeline.size(); ++i) {
    const auto& [status, since] = op.timeline[i];
    json::object step{{"status", status}, {"since", FormatRfc3339(since, true)}};
    if (i + 1 < op.timeline.size()) step["seconds"] = Seconds(op.timeline[i + 1].second - since);
    timeline.push_back(std::move(step));
  }
  v["timeline"] = std::move(timeline);
  if (!arm::IsTerminalState(op.status)) v["ageSeconds"] = Seconds(clock_->Now() - op.start);
  return v;
}

void LiveView::Apply(const store::Document& doc, bool deleted, bool is_new, bool during_load) {
  const json::object* body = doc.body.if_object();
  if (body == nullptr) return;
  const std::string type(GetString(*body, "resourceType").value_or(""));
  const json::object* props_ptr = GetObject(*body, "properties");
  static const json::object kEmpty;
  const json::object& props = props_ptr ? *props_ptr : kEmpty;
  const std::string key = Key(doc.partition_key, doc.id);
  const TimePoint committed = FromUnixMillis(doc.timestamp_ms);

  if (type == arm::kSubscriptionDocType) {
    json::object v{{"subscription", doc.partition_key}, {"state", Prop(props, "state")}};
    if (deleted) {
      subscriptions_.erase(doc.partition_key);
    } else {
      subscriptions_[doc.partition_key] = v;
    }
    if (!during_load) Emit("subscription", deleted ? "delete" : "upsert", v);
    return;
  }
  if (std::string kind = KindOf(type); !kind.empty()) {
    if (deleted) {
      auto it = resource_docs_.find(key);
      if (it == resource_docs_.end()) return;
      auto r = resources_.find(it->second);
      if (r != resources_.end()) {
        if (!during_load) Emit("resource", "delete", r->second);
        resources_.erase(r);
      }
      resource_docs_.erase(it);
      return;
    }
    const std::string id = Prop(props, "resourceId");
    json::object v{{"id", id},
                   {"type", kind},
                   {"subscription", doc.partition_key},
                   {"resourceGroup", SegmentAfter(id, "resourceGroups")},
                   {"cluster", SegmentAfter(id, "hcpOpenShiftClusters")},
                   {"name", id.substr(id.rfind('/') + 1)},
                   {"location", Prop(props, "location")},
                   {"provisioningState", Prop(props, "provisioningState")},
                   {"activeOperationId", Prop(props, "activeOperationId")},
                   {"conditions", Conditions(props)},
                   {"desiredVersion", DesiredVersion(props)},
                   {"activeVersions", ActiveVersions(props)},
                   {"updated", FormatRfc3339(committed, true)}};
    resource_docs_[key] = ToLower(id);
    if (auto old = resources_.find(ToLower(id)); old != resources_.end()) {
      for (std::string_view k : {"lastOperationId", "lastOperationStart"}) {
        if (const json::value* p = old->second.if_contains(k)) v[k] = *p;
      }
    }
    resources_[ToLower(id)] = v;
    if (!during_load) Emit("resource", "upsert", v);
    return;
  }
  if (type != arm::kOperationDocType) return;
  if (deleted) {
    auto it = operations_.find(key);
    if (it == operations_.end()) return;
    if (!during_load) Emit("operation", "delete", it->second.view);
    operations_.erase(it);
    return;
  }
  const std::string status = Prop(props, "status");
  auto [it, inserted] = operations_.try_emplace(key);
  Op& op = it->second;
  const TimePoint changed = TimeOf(props, "lastTransitionTime", committed);
  if (inserted) {
    op.request = Prop(props, "request");
    op.start = TimeOf(props, "startTime", committed);
    // What the view knows of the past of an operation it meets midway: its start, and now.
    op.timeline.emplace_back(
        arm::IsTerminalState(status) || status == arm::kStateDeleting ? status : "Accepted", op.start);
    if (op.timeline.back().first != status) op.timeline.emplace_back(status, changed);
    if (is_new && started_ != nullptr) started_->With({op.request})->Inc();
    if (is_new && arm::IsTerminalState(status) && ended_ != nullptr)
      ended_->With({op.request, status})->Inc();
  } else if (status != op.status) {
    if (state_seconds_ != nullptr && !op.status.empty()) {
      state_seconds_->With({op.status})->Observe(std::max(0.0, Seconds(changed - op.timeline.back().second)));
    }
    op.timeline.emplace_back(status, changed);
    if (arm::IsTerminalState(status) && ended_ != nullptr) ended_->With({op.request, status})->Inc();
  }
  if (inserted || status != op.status) op.last_change = changed;
  op.status = status;
  json::object v{{"id", doc.id},
                 {"subscription", doc.partition_key},
                 {"request", op.request},
                 {"status", status},
                 {"resourceId", Prop(props, "externalId")},
                 {"startTime", Prop(props, "startTime")},
                 {"lastTransitionTime", Prop(props, "lastTransitionTime")}};
  if (const json::object* e = GetObject(props, "error")) v["error"] = *e;
  op.view = std::move(v);
  // The resource remembers its latest operation, for the console's timeline once it has ended.
  if (auto r = resources_.find(ToLower(Prop(props, "externalId"))); r != resources_.end()) {
    const std::string latest = Prop(r->second, "lastOperationStart");
    const std::string start = Prop(props, "startTime");
    if (latest.empty() || start >= latest) {
      r->second["lastOperationId"] = doc.id;
      r->second["lastOperationStart"] = start;
    }
  }
  if (!during_load) Emit("operation", "upsert", OpJson(op));
}

Events LiveView::WaitEvents(uint64_t after, std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  cv_.WaitFor(lock, wait, [&]() HCPRP_REQUIRES(mu_) {
    return stopping_ || (!ring_.empty() && ring_.back().first > after);
  });
  Events out;
  out.last = next_event_ - 1;
  if (after > out.last) after = 0;  // a viewer of an earlier process: start over
  if (!ring_.empty() && after + 1 < ring_.front().first && after != 0) out.reset = true;
  if (after == 0) return out;  // a new viewer loads the lists; events from now on
  for (const auto& e : ring_) {
    if (e.first > after) out.events.push_back(e);
  }
  return out;
}

json::object LiveView::ListResources(const ListQuery& q) const {
  MutexLock lock(mu_);
  json::array items;
  size_t matched = 0;
  for (const auto& [id, view] : resources_) {
    if (!Matches(view, q)) continue;
    if (q.in_flight_only && Prop(view, "activeOperationId").empty()) continue;
    if (matched >= q.offset && items.size() < q.limit) items.push_back(view);
    ++matched;
  }
  return {{"items", std::move(items)}, {"total", matched}, {"offset", q.offset}};
}

json::object LiveView::ListOperations(const ListQuery& q) const {
  MutexLock lock(mu_);
  std::vector<const Op*> ops;
  for (const auto& [key, op] : operations_) {
    if (q.in_flight_only && arm::IsTerminalState(op.status)) continue;
    if (!q.subscription.empty() && !EqualsIgnoreCase(Prop(op.view, "subscription"), q.subscription)) continue;
    if (!q.search.empty() &&
        ToLower(Prop(op.view, "resourceId")).find(ToLower(q.search)) == std::string::npos)
      continue;
    ops.push_back(&op);
  }
  // Oldest first: the ones to look at.
  std::sort(ops.begin(), ops.end(), [](const Op* a, const Op* b) { return a->start < b->start; });
  json::array items;
  for (size_t i = q.offset; i < ops.size() && items.size() < q.limit; ++i) items.push_back(OpJson(*ops[i]));
  return {{"items", std::move(items)}, {"total", ops.size()}, {"offset", q.offset}};
}

json::array LiveView::ListSubscriptions() const {
  MutexLock lock(mu_);
  std::map<std::string, std::map<std::string, int64_t>> counts;
  for (const auto& [id, view] : resources_) ++counts[Prop(view, "subscription")][Prop(view, "type")];
  json::array out;
  for (const auto& [pk, view] : subscriptions_) {
    json::object v = view;
    json::object c;
    for (const auto& [t, n] : counts[pk]) c[t] = n;
    v["resources"] = std::move(c);
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<json::object> LiveView::Operation(std::string_view subscription, std::string_view id) const {
  MutexLock lock(mu_);
  auto it = operations_.find(Key(ToLower(subscription), id));
  if (it == operations_.end()) it = operations_.find(Key(subscription, id));
  if (it == operations_.end()) return std::nullopt;
  return OpJson(it->second);
}

json::object LiveView::Summary() const {
  MutexLock lock(mu_);
  json::object types, states;
  int64_t in_flight = 0;
  double oldest = 0;
  const TimePoint now = clock_->Now();
  for (const auto& [id, view] : resources_) {
    auto& slot = types[Prop(view, "type")];
    slot = (slot.is_int64() ? slot.as_int64() : 0) + 1;
  }
  for (const auto& [key, op] : operations_) {
    auto& slot = states[op.status];
    slot = (slot.is_int64() ? slot.as_int64() : 0) + 1;
    if (!arm::IsTerminalState(op.status)) {
      ++in_flight;
      oldest = std::max(oldest, Seconds(now - op.start));
    }
  }
  return {{"subscriptions", subscriptions_.size()}, {"resources", std::move(types)},
          {"operations", std::move(states)},        {"inFlight", in_flight},
          {"oldestInFlightSeconds", oldest},        {"lastEvent", next_event_ - 1}};
}

void LiveView::RegisterMetrics(metrics::Registry& r) {
  started_ = &r.AddCounter("hcprp_operations_started_total", "Asynchronous operations started, by request",
                           {"request"});
  ended_ = &r.AddCounter("hcprp_operations_ended_total",
                         "Asynchronous operations that reached a terminal state, by request and state",
                         {"request", "state"});
  state_seconds_ = &r.AddHistogram("hcprp_operation_state_duration_seconds",
                                   "Time operations spent in a state before leaving it", {"state"},
                                   metrics::DurationBuckets());
  r.AddCallback("hcprp_operations_in_flight", "Non-terminal operations, by state", metrics::Type::kGauge,
                {"state"}, [this] {
                  MutexLock lock(mu_);
                  std::map<std::string, double> by_state;
                  for (const auto& [k, op] : operations_) {
                    if (!arm::IsTerminalState(op.status)) by_state[op.status] += 1;
                  }
                  std::vector<metrics::Sample> out;
                  for (auto& [s, n] : by_state) out.push_back({{s}, n});
                  return out;
                });
  r.AddCallback("hcprp_operation_oldest_in_flight_age_seconds",
                "Age of the oldest non-terminal operation (0 when none)", metrics::Type::kGauge, {}, [this] {
                  MutexLock lock(mu_);
                  double oldest = 0;
                  const TimePoint now = clock_->Now();
                  for (const auto& [k, op] : operations_) {
                    if (!arm::IsTerminalState(op.status)) oldest = std::max(oldest, Seconds(now - op.start));
                  }
                  return std::vector<metrics::Sample>{{{}, oldest}};
                });
  r.AddCallback("hcprp_operations_stuck",
                "Non-terminal operations whose status has not changed for the stuck threshold",
                metrics::Type::kGauge, {}, [this] {
                  MutexLock lock(mu_);
                  double stuck = 0;
                  const TimePoint now = clock_->Now();
                  for (const auto& [k, op] : operations_) {
                    if (!arm::IsTerminalState(op.status) && now - op.last_change >= options_.stuck_after)
                      stuck += 1;
                  }
                  return std::vector<metrics::Sample>{{{}, stuck}};
                });
}

}  // namespace hcprp::admin
