#include "backend/version_controller.h"

#include <set>
#include <unordered_set>

#include "arm/documents.h"
#include "backend/documents.h"
#include "clusterservice/update_graph.h"
#include "core/task_pool.h"

namespace hcprp::backend {

namespace {

// Counts a cluster under "<version> <state>": its running versions (completed, partial) and its
// desired version when nothing runs it yet.
std::vector<std::string> CountedAs(const clusterservice::ServiceObject& o) {
  std::vector<std::string> keys;
  bool desired_runs = false;
  if (o.status.version_history) {
    for (const json::value& v : *o.status.version_history) {
      const json::object* e = v.if_object();
      if (e == nullptr) continue;
      std::string key(GetString(*e, "version").value_or(""));
      if (key == o.desired_version) desired_runs = true;
      const bool completed = GetString(*e, "state").value_or("") == "Completed";
      key += completed ? " completed" : " partial";
      keys.push_back(std::move(key));
      if (completed) break;
    }
  }
  if (!desired_runs) keys.push_back(o.desired_version + " desired");
  return keys;
}

// The view's entry of a cluster object; nullopt when it is not one the controller keeps (being
// deleted, or without a subscription or version).
std::optional<ClusterVersionState> StateOf(const clusterservice::ServiceObject& o, std::string_view state) {
  if (o.href.empty() || o.subscription_id.empty() || o.desired_version.empty()) return std::nullopt;
  if (state == "uninstalling" || state == clusterservice::kDeletedState) return std::nullopt;
  ClusterVersionState c;
  c.href = o.href;
  c.partition_key = arm::PartitionKey(o.subscription_id);
  c.channel_group = o.channel_group;
  c.service_desired = o.desired_version;
  c.counted_as = CountedAs(o);
  return c;
}

}  // namespace

void VersionController::Request() {
  {
    MutexLock lock(mu_);
    requested_ = true;
  }
  cv_.NotifyAll();
}

void VersionController::RequestResync() {
  {
    MutexLock lock(mu_);
    requested_ = true;
    resync_requested_ = true;
  }
  cv_.NotifyAll();
}

void VersionController::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
}

void VersionController::Observe(const clusterservice::Event& event) {
  if (event.kind != "Cluster") return;
  bool request = false;
  {
    MutexLock lock(view_mu_);
    if (!view_loaded_ && !loading_) return;  // the first full pass reads it
    request = ApplyEvent(event, &view_);
    if (loading_) replay_.push_back(event);
  }
  if (request) Request();
}

bool VersionController::ApplyEvent(const clusterservice::Event& event, View* view) {
  std::optional<ClusterVersionState> seen = StateOf(event.object, event.state);
  if (!seen) {
    view->erase(event.href);
    return false;
  }
  auto [it, added] = view->try_emplace(event.href, *seen);
  ClusterVersionState& c = it->second;
  if (!added) {
    c.channel_group = seen->channel_group;
    c.service_desired = seen->service_desired;
    c.counted_as = std::move(seen->counted_as);
  }
  return added || clusterservice::NewerThan(c.service_desired, c.stored_desired);
}

void VersionController::Run() {
  while (true) {
    bool full = false;
    {
      MutexLock lock(mu_);
      const bool woken =
          cv_.WaitFor(lock, resync_, [this]() HCPRP_REQUIRES(mu_) { return stopping_ || requested_; });
      if (stopping_) return;
      full = !woken || resync_requested_;
      requested_ = false;
      resync_requested_ = false;
    }
    if (auto r = full ? Pass() : ViewPass(); !r.ok()) {
      ++counters_->errors;
      logger_->Warn("version pass failed", {{"error", r.error().ToString()}});
      RequestResync();  // again after the wait below has passed
      MutexLock lock(mu_);
      cv_.WaitFor(lock, std::chrono::seconds(5), [this]() HCPRP_REQUIRES(mu_) { return stopping_; });
    }
  }
}

Result<VersionPassResult> VersionController::Pass() {
  MutexLock pass(pass_mu_);
  return FullPassLocked();
}

Result<VersionPassResult> VersionController::ViewPass() {
  MutexLock pass(pass_mu_);
  {
    MutexLock lock(view_mu_);
    if (!view_loaded_) return FullPassLocked();
  }
  std::vector<ClusterVersionState> owned = OwnedOfView();
  VersionPassResult result;
  result.clusters = owned.size();
  return Apply(std::move(owned), std::move(result));
}

Result<VersionPassResult> VersionController::FullPassLocked() {
  {
    MutexLock lock(view_mu_);
    loading_ = true;
    replay_.clear();
  }
  VersionPassResult result;
  Result<View> view = ListClusters(&result);
  Status stored = view.ok() ? ReadStored(&*view) : Status(view.error());
  {
    MutexLock lock(view_mu_);
    loading_ = false;
    std::vector<clusterservice::Event> replay = std::move(replay_);
    replay_.clear();
    if (!stored.ok()) return stored.error();
    for (const clusterservice::Event& e : replay) ApplyEvent(e, &*view);
    view_ = std::move(view).value();
    view_loaded_ = true;
  }
  std::vector<ClusterVersionState> owned = OwnedOfView();
  result.clusters = owned.size();
  return Apply(std::move(owned), std::move(result));
}

Result<VersionController::View> VersionController::ListClusters(VersionPassResult* result) {
  HCPRP_ASSIGN_OR_RETURN(json::array clusters,
                         cs_->List(std::string(clusterservice::kApiPrefix) + "/clusters"));
  View view;
  view.reserve(clusters.size());
  for (const json::value& item : clusters) {
    const json::object* object = item.if_object();
    if (object == nullptr) continue;
    clusterservice::ServiceObject o = clusterservice::ParseServiceObject(*object);
    std::optional<ClusterVersionState> c = StateOf(o, o.status.state);
    if (!c || !ownership_->FenceFor(c->partition_key)) continue;
    for (const std::string& key : c->counted_as) ++result->by_version[key];
    view.emplace(c->href, std::move(*c));
  }
  return view;
}

Status VersionController::ReadStored(View* view) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(kServiceProviderClusterDocType);
  q.max_items = 1000;
  std::map<std::string, std::vector<store::Document>> gone;  // by partition
  do {
    HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, store_->Query(q));
    for (store::Document& d : page.documents) {
      std::optional<ServiceProviderCluster> held = ServiceProviderCluster::FromBody(d.body);
      if (!held || !ownership_->FenceFor(d.partition_key)) continue;
      auto it = view->find(held->href);
      if (it == view->end()) {
        gone[d.partition_key].push_back(std::move(d));
        continue;
      }
      it->second.stored_desired = held->desired_version;
      it->second.etag = d.etag;
    }
    q.continuation = page.continuation;
  } while (!q.continuation.empty());
  // The documents of clusters the Cluster Service no longer has (unless one was written since).
  for (auto& [pk, docs] : gone) {
    std::optional<store::Lease> fence = ownership_->FenceFor(pk);
    if (!fence) continue;
    for (size_t begin = 0; begin < docs.size(); begin += kMaxBatch) {
      std::vector<store::WriteOp> ops;
      for (size_t i = begin; i < std::min(docs.size(), begin + kMaxBatch); ++i) {
        ops.push_back(store::WriteOp::Delete(docs[i].id, docs[i].etag));
      }
      if (auto r = store_->Batch(store::kResources, pk, std::move(ops), &*fence); !r.ok()) {
        logger_->Info("service provider cluster documents not removed",
                      {{"partition", pk}, {"error", r.error().ToString()}});
      }
    }
  }
  return Status::Ok();
}

std::vector<ClusterVersionState> VersionController::OwnedOfView() const {
  std::vector<ClusterVersionState> owned;
  MutexLock lock(view_mu_);
  owned.reserve(view_.size());
  for (const auto& [href, c] : view_) {
    if (ownership_->FenceFor(c.partition_key)) owned.push_back(c);
  }
  return owned;
}

VersionPassResult VersionController::Apply(std::vector<ClusterVersionState> clusters,
                                           VersionPassResult result) {
  const ChannelPicks picks = PicksOf(clusters);
  for (const ClusterVersionState& c : clusters) {
    auto pick = picks.find(DecidingChannel(c));
    if (pick == picks.end() || !pick->second) ++result.failed;
  }
  const std::vector<DesiredWrite> writes = PlanDesiredWrites(clusters, picks);
  size_t streamed_ok = 0;
  DesiredCommit commit = CommitAndTrigger(writes, &streamed_ok);
  result.failed += commit.failed;
  result.recorded = commit.written.size();
  for (const DesiredWrite& w : commit.written) {
    if (!w.raises_service) continue;
    ++result.raised;
    logger_->Info("desired version raised", {{"cluster", w.href}, {"from", w.from}, {"to", w.to}});
  }
  raised_total_ += result.raised;
  // What the store holds now, in the view and in the plan of the trigger stage.
  std::unordered_map<std::string_view, const StoredDesired*> stored;
  for (const StoredDesired& s : commit.stored) stored[s.href] = &s;
  {
    MutexLock lock(view_mu_);
    for (ClusterVersionState& c : clusters) {
      auto s = stored.find(c.href);
      if (s == stored.end()) continue;
      c.stored_desired = s->second->desired;
      c.etag = s->second->etag;
      if (auto v = view_.find(c.href); v != view_.end()) {
        v->second.stored_desired = c.stored_desired;
        v->second.etag = c.etag;
      }
    }
  }
  std::unordered_set<std::string_view> streamed;
  size_t streamed_count = 0;
  for (const DesiredWrite& w : commit.written) {
    if (w.raises_service && streamed.insert(w.href).second) ++streamed_count;
  }
  std::vector<const ClusterVersionState*> triggers = PlanTriggers(clusters);
  std::erase_if(triggers, [&](const ClusterVersionState* c) { return streamed.count(c->href) > 0; });
  result.triggered = streamed_ok + TriggerAll(triggers);
  result.failed += streamed_count + triggers.size() - result.triggered;
  if (result.recorded > 0 || result.triggered > 0 || result.failed > 0) {
    logger_->Info("version pass", {{"clusters", result.clusters},
                                   {"recorded", result.recorded},
                                   {"raised", result.raised},
                                   {"triggered", result.triggered},
                                   {"failed", result.failed}});
  }
  return result;
}

DesiredCommit VersionController::CommitAndTrigger(const std::vector<DesiredWrite>& writes,
                                                  size_t* triggered) {
  *triggered = 0;
  if (writes.empty()) return {};  // most passes: no thread started
  std::atomic<size_t> asked{0};
  TaskPool triggers(0, static_cast<int>(concurrency_));
  DesiredCommit commit = writer_.Commit(writes, [&](std::span<const DesiredWrite> batch) {
    for (const DesiredWrite& w : batch) {
      if (!w.raises_service) continue;
      ClusterVersionState c;
      c.href = w.href;
      c.partition_key = w.partition_key;
      c.channel_group = w.channel_group;
      c.stored_desired = w.to;
      triggers.Submit([this, &asked, c = std::move(c)] {
        if (TriggerOne(c)) asked.fetch_add(1);
      });
    }
  });
  triggers.Shutdown();  // runs what is queued
  *triggered = asked;
  return commit;
}

ChannelPicks VersionController::PicksOf(const std::vector<ClusterVersionState>& clusters) {
  std::set<std::string> channels;
  std::set<VersionsKey> seen;  // a deciding channel depends on these only; most clusters share them
  for (const ClusterVersionState& c : clusters) {
    if (seen.insert(KeyOf(c)).second) channels.insert(DecidingChannel(c));
  }
  ChannelPicks picks;
  for (const std::string& channel : channels) {
    if (channel.empty()) continue;
    const size_t dash = channel.rfind('-');
    const std::string group = channel.substr(0, dash);
    const std::string minor = channel.substr(dash + 1);
    const std::string path = clusterservice::GraphPath(channel);
    auto graph = cs_->Get(path);
    auto pick = graph.ok() ? clusterservice::SelectDesiredVersion(*graph, minor, group, path)
                           : Result<std::string>(graph.error());
    if (!pick.ok()) {
      logger_->Info("no desired version", {{"channel", channel}, {"error", pick.error().ToString()}});
      picks.emplace(channel, std::nullopt);
      continue;
    }
    picks.emplace(channel, std::move(pick).value());
  }
  return picks;
}

size_t VersionController::TriggerAll(const std::vector<const ClusterVersionState*>& triggers) {
  std::atomic<size_t> triggered{0};
  ForEachOnThreads(triggers.size(), concurrency_, [&](size_t i) {
    if (TriggerOne(*triggers[i])) triggered.fetch_add(1);
  });
  return triggered;
}

bool VersionController::TriggerOne(const ClusterVersionState& c) {
  json::object patch{
      {"version", json::object{{"id", clusterservice::VersionIdOf(c.stored_desired, c.channel_group)},
                               {"channel_group", c.channel_group}}}};
  if (auto u = cs_->Update(c.href, patch); !u.ok()) {
    // A cluster busy with another change is asked again on a later pass.
    logger_->Info("upgrade not requested",
                  {{"cluster", c.href}, {"version", c.stored_desired}, {"error", u.error().ToString()}});
    return false;
  }
  MutexLock lock(view_mu_);
  if (auto v = view_.find(c.href);
      v != view_.end() && clusterservice::NewerThan(c.stored_desired, v->second.service_desired)) {
    v->second.service_desired = c.stored_desired;
  }
  return true;
}

std::map<std::string, size_t> VersionController::Counts() const {
  std::map<std::string, size_t> counts;
  MutexLock lock(view_mu_);
  for (const auto& [href, c] : view_) {
    for (const std::string& key : c.counted_as) ++counts[key];
  }
  return counts;
}

}  // namespace hcprp::backend
