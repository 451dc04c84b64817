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
  const bool requested = pass_requested_ && ownership_->Coordinator();
  {
    MutexLock lock(mu_);
    if (!force && !requested && now < next_pass_) return;
    next_pass_ = now + options_.interval;
  }
  if (requested) pass_requested_ = false;
  (void)Collect(nullptr);
}

Status OrphanCollector::Plan(std::vector<OrphanCandidate>* plan) { return Collect(plan); }

Status OrphanCollector::KnownInternalIds(std::string_view doc_type, std::unordered_set<std::string>* known,
                                         std::vector<store::Document>* idle) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(doc_type);
  q.max_items = kQueryPage;
  return store::ForEachDocument(*store_, q, [&](const store::Document& d) {
    std::string href = InternalIdOf(d.body);
    if (href.empty()) return;
    known->insert(std::move(href));
    const json::object* props = GetObject(d.body.as_object(), "properties");
    if (props != nullptr && !GetString(*props, "activeOperationId")) idle->push_back(d);
  });
}

void OrphanCollector::Hold(const json::object& listed, const std::string& href, TimePoint created,
                           const RestoreGap& gap) {
  {
    MutexLock lock(mu_);
    if (!held_.insert(href).second) return;
  }
  HeldObject held{href, "", StateOfListed(listed), created, gap.since};
  clusterservice::ServiceObject object = clusterservice::ParseServiceObject(listed);
  if (auto id = ResourceIdOfObject(*cs_, href, object)) held.resource_id = id->ToString();
  auto written = store_->Upsert(store::kLocks, kHeldPartition, HeldObjectId(href), HeldObjectBody(held));
  if (!written.ok()) {
    MutexLock lock(mu_);
    held_.erase(href);  // the next pass records it
    ++counters_->errors;
    return;
  }
  ++counters_->gc_held;
  logger_->Warn(
      "Cluster Service object made while the store heard from no backend has no resource "
      "document: held for the operator, not deleted",
      {{"internalId", href},
       {"resourceId", held.resource_id},
       {"created", FormatRfc3339(created, true)},
       {"storeSilentSince", FormatRfc3339(gap.since, true)}});
}

void OrphanCollector::ReleaseHeld(const std::set<std::string>& seen,
                                  const std::unordered_set<std::string>& known) {
  auto held = ReadHeldObjects(*store_);
  if (!held.ok()) return;
  for (const HeldObject& h : *held) {
    // Node pools of clusters without a document are not listed: such a pool goes with its cluster.
    if (seen.count(h.href) > 0 && known.count(h.href) == 0) continue;
    if (seen.count(h.href) == 0) {
      auto got = cs_->Get(h.href);
      if (got.ok() || !got.error().IsNotFound()) continue;
    }
    (void)store_->Delete(store::kLocks, kHeldPartition, HeldObjectId(h.href));
    MutexLock lock(mu_);
    held_.erase(h.href);
    logger_->Info("held Cluster Service object resolved", {{"internalId", h.href}});
  }
}

void OrphanCollector::FollowGoneObjects(const std::vector<store::Document>& idle,
                                        const std::set<std::string>& seen) {
  for (const store::Document& d : idle) {
    const std::string href = InternalIdOf(d.body);
    if (seen.count(href) > 0 || !ownership_->FenceFor(d.partition_key)) continue;
    auto got = cs_->Get(href);  // the listing is older than the documents: ask about this one
    if (got.ok() || !got.error().IsNotFound()) continue;
    logger_->Warn(
        "resource points at a Cluster Service object that is gone: deleting it as its delete "
        "finished",
        {{"internalId", href}, {"document", d.id}});
    writer_->EnsureDeleteOperation(d);
  }
}

bool OrphanCollector::CollectIfOrphan(const json::object& listed, std::string_view collection,
                                      const std::unordered_set<std::string>& known, TimePoint now,
                                      std::set<std::string>* seen, std::vector<OrphanCandidate>* plan) {
  std::string href = HrefOfListed(listed, collection);
  if (href.empty()) return true;
  seen->insert(href);
  if (known.count(href) > 0 || StateOfListed(listed) == "uninstalling") return true;
  auto stamp = ParseRfc3339(GetString(listed, "creation_timestamp").value_or(""));
  std::optional<TimePoint> made;
  if (stamp.ok()) made = *stamp;
  TimePoint first_seen = now;
  {
    MutexLock lock(mu_);
    if (plan == nullptr) {
      first_seen = first_seen_.try_emplace(href, now).first->second;
    } else if (auto it = first_seen_.find(href); it != first_seen_.end()) {
      first_seen = it->second;
    }
  }
  const TimePoint created = made ? std::min(*made, first_seen) : first_seen;
  const std::optional<RestoreGap> gap = events_->Gap();
  const UnknownObjectAction action = DecideUnknownObject(made, first_seen, gap, options_.window, now);
  if (plan != nullptr) {
    plan->push_back(OrphanCandidate{href, StateOfListed(listed), created, created + options_.window,
                                    action == UnknownObjectAction::kCollect,
                                    action == UnknownObjectAction::kHold});
    return true;
  }
  if (action == UnknownObjectAction::kHold) {
    Hold(listed, href, *made, *gap);
    return true;
  }
  if (action == UnknownObjectAction::kWait) return true;
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
  // Never before the gap is known: an object the restored store lost must not look like an orphan.
  HCPRP_RETURN_IF_ERROR(events_->ReadGap());
  HCPRP_ASSIGN_OR_RETURN(json::array clusters, cs_->List(clusters_href));
  std::unordered_set<std::string> known;
  for (std::string& href : index_->InternalIds()) known.insert(std::move(href));
  // Never collect on partial knowledge.
  std::vector<store::Document> idle;
  HCPRP_RETURN_IF_ERROR(KnownInternalIds(arm::kClusterDocType, &known, &idle));

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
  const bool pools_known = KnownInternalIds(arm::kNodePoolDocType, &known, &idle).ok();
  if (!pools.empty()) {
    if (pools_known) {
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
  if (pools_known) {
    FollowGoneObjects(idle, seen);
    ReleaseHeld(seen, known);
  }
  MutexLock lock(mu_);
  for (auto it = first_seen_.begin(); it != first_seen_.end();) {
    it = seen.count(it->first) > 0 ? std::next(it) : first_seen_.erase(it);
  }
  return Status::Ok();
}

}  // namespace hcprp::backend
