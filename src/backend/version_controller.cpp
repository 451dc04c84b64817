#include "backend/version_controller.h"

#include "arm/documents.h"
#include "clusterservice/update_graph.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace hcprp::backend {

namespace {

// What a pass needs of a Cluster Service cluster.
struct ClusterVersion {
  std::string href;
  std::string partition_key;
  std::string desired;  // raw
  std::string channel_group;
  const json::array* history = nullptr;  // of the listed object; null: none
};

std::optional<ClusterVersion> ClusterVersionOf(const json::object& object) {
  ClusterVersion c;
  c.href = std::string(GetString(object, "href").value_or(""));
  const json::object* azure = GetObject(object, "azure");
  const json::object* version = GetObject(object, "version");
  if (c.href.empty() || azure == nullptr || version == nullptr) return std::nullopt;
  auto sub = GetString(*azure, "subscription_id");
  auto id = GetString(*version, "id");
  if (!sub || !id) return std::nullopt;
  c.partition_key = arm::PartitionKey(*sub);
  c.desired = clusterservice::RawVersionOf(*id);
  c.channel_group = std::string(GetString(*version, "channel_group").value_or("stable"));
  if (const json::object* status = GetObject(object, "status")) {
    if (GetString(*status, "state").value_or("") == "uninstalling") return std::nullopt;
    c.history = GetArray(*status, "version_history");
  }
  return c;
}

// Counts a cluster under "<version> <state>": its running versions (completed, partial) and its
// desired version when nothing runs it yet.
void Count(const ClusterVersion& c, std::map<std::string, size_t>* counts) {
  bool desired_runs = false;
  const size_t entries = c.history != nullptr ? c.history->size() : 0;
  for (size_t i = 0; i < entries; ++i) {
    const json::object* e = (*c.history)[i].if_object();
    if (e == nullptr) continue;
    std::string key(GetString(*e, "version").value_or(""));
    if (key == c.desired) desired_runs = true;
    const bool completed = GetString(*e, "state").value_or("") == "Completed";
    key += completed ? " completed" : " partial";
    ++(*counts)[key];
    if (completed) break;
  }
  if (!desired_runs) ++(*counts)[c.desired + " desired"];
}

}  // namespace

void VersionController::Request() {
  {
    MutexLock lock(mu_);
    requested_ = true;
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

void VersionController::Run() {
  while (true) {
    {
      MutexLock lock(mu_);
      cv_.WaitFor(lock, resync_, [this]() HCPRP_REQUIRES(mu_) { return stopping_ || requested_; });
      if (stopping_) return;
      requested_ = false;
    }
    if (auto r = Pass(); !r.ok()) {
      ++counters_->errors;
      logger_->Warn("version pass failed", {{"error", r.error().ToString()}});
      Request();  // again after the wait below has passed
      MutexLock lock(mu_);
      cv_.WaitFor(lock, std::chrono::seconds(5), [this]() HCPRP_REQUIRES(mu_) { return stopping_; });
    }
  }
}

Result<VersionPassResult> VersionController::Pass() {
  MutexLock pass(pass_mu_);
  HCPRP_ASSIGN_OR_RETURN(json::array clusters,
                         cs_->List(std::string(clusterservice::kApiPrefix) + "/clusters"));
  VersionPassResult result;
  std::vector<Raise> raises = PlanRaises(clusters, &result);
  RaiseAll(raises, &result);
  if (result.raised > 0 || result.failed > 0) {
    logger_->Info("version pass",
                  {{"clusters", result.clusters}, {"raised", result.raised}, {"failed", result.failed}});
  }
  MutexLock lock(mu_);
  last_counts_ = result.by_version;
  return result;
}

std::vector<VersionController::Raise> VersionController::PlanRaises(const json::array& clusters,
                                                                    VersionPassResult* result) {
  // By channel, read and picked from once a pass: every cluster of a channel shares its minor and group.
  std::map<std::string, Result<std::string>> picks;
  std::vector<Raise> raises;
  for (const json::value& item : clusters) {
    const json::object* object = item.if_object();
    std::optional<ClusterVersion> c = object != nullptr ? ClusterVersionOf(*object) : std::nullopt;
    if (!c || !ownership_->FenceFor(c->partition_key)) continue;
    ++result->clusters;
    Count(*c, &result->by_version);
    const std::string channel = clusterservice::ChannelOf(c->channel_group, c->desired);
    auto [it, added] = picks.try_emplace(channel, std::string());
    if (added) it->second = PickOf(channel, clusterservice::MinorOf(c->desired), c->channel_group);
    if (!it->second.ok()) {
      ++result->failed;
      continue;
    }
    if (!clusterservice::NewerThan(*it->second, c->desired)) continue;
    raises.push_back(
        Raise{std::move(c->href), std::move(c->desired), *it->second, std::move(c->channel_group)});
  }
  return raises;
}

Result<std::string> VersionController::PickOf(const std::string& channel, std::string_view minor,
                                              std::string_view channel_group) {
  const std::string path = clusterservice::GraphPath(channel);
  HCPRP_ASSIGN_OR_RETURN(json::object graph, cs_->Get(path));
  return clusterservice::SelectDesiredVersion(graph, minor, channel_group, path);
}

void VersionController::RaiseAll(const std::vector<Raise>& raises, VersionPassResult* result) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> raised{0};
  std::atomic<size_t> failed{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < raises.size(); i = next.fetch_add(1)) {
      (RaiseOne(raises[i]) ? raised : failed).fetch_add(1);
    }
  };
  const size_t threads = std::min(concurrency_, raises.size());
  std::vector<std::thread> helpers;
  helpers.reserve(threads > 0 ? threads - 1 : 0);
  for (size_t i = 1; i < threads; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  result->raised += raised;
  result->failed += failed;
  raised_total_ += raised;
}

bool VersionController::RaiseOne(const Raise& r) {
  json::object patch{{"version", json::object{{"id", clusterservice::VersionIdOf(r.to, r.channel_group)},
                                              {"channel_group", r.channel_group}}}};
  if (auto u = cs_->Update(r.href, patch); !u.ok()) {
    // A cluster busy with another change is raised on a later pass.
    logger_->Info("desired version not raised",
                  {{"cluster", r.href}, {"version", r.to}, {"error", u.error().ToString()}});
    return false;
  }
  logger_->Info("desired version raised", {{"cluster", r.href}, {"from", r.from}, {"to", r.to}});
  return true;
}

std::map<std::string, size_t> VersionController::LastCounts() const {
  MutexLock lock(mu_);
  return last_counts_;
}

}  // namespace hcprp::backend
