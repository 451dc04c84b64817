#include "backend/version_controller.h"

#include "arm/documents.h"
#include "clusterservice/update_graph.h"

namespace hcprp::backend {

namespace {

// What a pass needs of a Cluster Service cluster.
struct ClusterVersion {
  std::string href;
  std::string partition_key;
  std::string desired;  // raw
  std::string channel_group;
  json::array history;
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
    if (const json::array* h = GetArray(*status, "version_history")) c.history = *h;
  }
  return c;
}

// Counts a cluster under "<version> <state>": its running versions (completed, partial) and its
// desired version when nothing runs it yet.
void Count(const ClusterVersion& c, std::map<std::string, size_t>* counts) {
  bool desired_runs = false;
  for (const json::value& v : c.history) {
    const json::object* e = v.if_object();
    if (e == nullptr) continue;
    std::string version(GetString(*e, "version").value_or(""));
    std::string state = GetString(*e, "state").value_or("") == "Completed" ? "completed" : "partial";
    if (version == c.desired) desired_runs = true;
    ++(*counts)[version + " " + state];
    if (state == "completed") break;
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
  std::map<std::string, Result<json::object>> graphs;  // by channel, read once a pass
  for (const json::value& item : clusters) {
    const json::object* object = item.if_object();
    std::optional<ClusterVersion> c = object != nullptr ? ClusterVersionOf(*object) : std::nullopt;
    if (!c || !ownership_->FenceFor(c->partition_key)) continue;
    ++result.clusters;
    Count(*c, &result.by_version);
    const std::string channel = clusterservice::ChannelOf(c->channel_group, c->desired);
    auto [it, added] = graphs.try_emplace(channel, json::object{});
    if (added) it->second = cs_->Get(clusterservice::GraphPath(channel));
    if (!it->second.ok()) {
      ++result.failed;
      continue;
    }
    auto pick = clusterservice::SelectDesiredVersion(*it->second, clusterservice::MinorOf(c->desired),
                                                     c->channel_group, clusterservice::GraphPath(channel));
    if (!pick.ok()) {
      ++result.failed;
      continue;
    }
    if (!clusterservice::NewerThan(*pick, c->desired)) continue;
    json::object patch{{"version", json::object{{"id", clusterservice::VersionIdOf(*pick, c->channel_group)},
                                                {"channel_group", c->channel_group}}}};
    if (auto r = cs_->Update(c->href, patch); !r.ok()) {
      ++result.failed;  // a cluster busy with another change is raised on a later pass
      logger_->Info("desired version not raised",
                    {{"cluster", c->href}, {"version", *pick}, {"error", r.error().ToString()}});
      continue;
    }
    ++result.raised;
    ++raised_total_;
    logger_->Info("desired version raised", {{"cluster", c->href}, {"from", c->desired}, {"to", *pick}});
  }
  MutexLock lock(mu_);
  last_counts_ = result.by_version;
  return result;
}

std::map<std::string, size_t> VersionController::LastCounts() const {
  MutexLock lock(mu_);
  return last_counts_;
}

}  // namespace hcprp::backend
