#include "backend/orphan_collector.h"

#include <algorithm>

#include "arm/documents.h"
#include "backend/documents.h"
#include "core/time.h"

namespace hcprp::backend {

namespace {

constexpr size_t kQueryPage = 1000;

std::string StateOfListed(const json::object& o) {
  std::string state(GetString(o, "state").value_or(""));
  if (const json::object* st = GetObject(o, "status"))
    state = std::string(GetString(*st, "state").value_or(state));
  return state;
}

}  // namespace

void OrphanCollector::MaybeRun(bool force) {
  MutexLock pass(pass_mu_);
  TimePoint now = clock_->Now();
  {
    MutexLock lock(mu_);
    if (!force && now < next_pass_) return;
    next_pass_ = now + options_.interval;
  }
  (void)Collect(nullptr);
}

Status OrphanCollector::Plan(std::vector<OrphanCandidate>* plan) { return Collect(plan); }

Status OrphanCollector::KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(doc_type);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& d) {
    std::string href = InternalIdOf(d.body);
    if (!href.empty()) known->insert(std::move(href));
  });
}

bool OrphanCollector::CollectIfOrphan(const json::object& listed, std::string_view collection,
                                      const std::unordered_set<std::string>& known, TimePoint now,
                                      std::set<std::string>* seen, std::vector<OrphanCandidate>* plan) {
  std::string href = HrefOfListed(listed, collection);
  if (href.empty()) return true;
  seen->insert(href);
  if (known.count(href) > 0 || StateOfListed(listed) == "uninstalling") return true;
  TimePoint created;
  auto stamp = ParseRfc3339(GetString(listed, "creation_timestamp").value_or(""));
  {
    MutexLock lock(mu_);
    TimePoint first_seen = now;
    if (plan == nullptr) {
      first_seen = first_seen_.try_emplace(href, now).first->second;
    } else if (auto it = first_seen_.find(href); it != first_seen_.end()) {
      first_seen = it->second;
    }
    created = stamp.ok() ? std::min(*stamp, first_seen) : first_seen;
  }
  if (plan != nullptr) {
    plan->push_back(OrphanCandidate{href, StateOfListed(listed), created, created + options_.window,
                                    now - created >= options_.window});
    return true;
  }
  if (now - created < options_.window) return true;
  if (!ownership_->Coordinator()) return false;
  Status d = cs_->Delete(href);
  if (d.ok()) {
    ++counters_->gc_deleted;
    logger_->Info("deleted orphan", {{"internalId", href}});
  } else if (!d.error().IsNotFound()) {
    ++counters_->errors;
  }
  return true;
}

Status OrphanCollector::Collect(std::vector<OrphanCandidate>* plan) {
  // One backend collects for the whole store.
  if (plan == nullptr && !ownership_->Coordinator()) return Status::Ok();
  // Cluster Service first, documents second: a document is written before its Cluster Service
  // object is created, so every object listed here whose document exists is seen by the query.
  const std::string clusters_href = std::string(clusterservice::kApiPrefix) + "/clusters";
  HCPRP_ASSIGN_OR_RETURN(json::array clusters, cs_->List(clusters_href));
  std::unordered_set<std::string> known;
  for (std::string& href : index_->InternalIds()) known.insert(std::move(href));
  // Never collect on partial knowledge.
  HCPRP_RETURN_IF_ERROR(KnownInternalIds(arm::kClusterDocType, &known));

  TimePoint now = clock_->Now();
  std::set<std::string> seen;
  std::vector<std::string> kept_clusters;
  for (const json::value& item : clusters) {
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
      MutexLock lock(mu_);
      for (const auto& [href, first] : first_seen_) {
        if (href.find("/node_pools/") != std::string::npos) seen.insert(href);
      }
    }
  }

  if (plan != nullptr) return Status::Ok();
  MutexLock lock(mu_);
  for (auto it = first_seen_.begin(); it != first_seen_.end();) {
    it = seen.count(it->first) > 0 ? std::next(it) : first_seen_.erase(it);
  }
  return Status::Ok();
}

}  // namespace hcprp::backend
