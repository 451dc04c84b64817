// Copies a Cluster Service object's synced status fields (clusterservice::SyncedStatusFields:
// status.conditions and status.version_history) into the resource document that points at it
// (arm::kPathServiceStatus), for the frontend to render (private to src/backend). Best effort: a
// refused or failed write is left to the next event or status read. Never changes an operation.
// Thread-safe (stateless apart from its collaborators).
#pragma once

#include <string>

#include "arm/resource_id.h"
#include "backend/counters.h"
#include "backend/ownership.h"
#include "clusterservice/client.h"
#include "core/json.h"
#include "core/log.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::backend {

class ConditionSync {
 public:
  // Not owned; all must outlive this.
  // `upgrade_seconds` (may be null: no metrics) gets the duration of each upgrade whose completion a
  // sync records: {kind} "cluster" or "node_pool".
  ConditionSync(store::Store* store, clusterservice::Client* cs, Ownership* ownership, Counters* counters,
                const Logger* logger, metrics::Family<metrics::Histogram>* upgrade_seconds)
      : store_(store),
        cs_(cs),
        ownership_(ownership),
        counters_(counters),
        logger_(logger),
        upgrade_seconds_(upgrade_seconds) {}

  // Syncs `fields` (the object `href`'s SyncedStatusFields) into the resource `resource_id` of
  // partition `pk` when the resource still points at `href` and a field differs.
  void Sync(const std::string& pk, const std::string& resource_id, const std::string& href,
            const json::object& fields);
  // An event of a cluster or node pool with no operation in flight (an identity deleted while the
  // cluster is idle changes its conditions): finds the resource from the object's ARM coordinates
  // and syncs its conditions the same way.
  void SyncIdle(const clusterservice::Event& event);
  // After events may have been missed for good (the stream no longer reaches back): lists the
  // clusters, and the node pools of those in owned partitions, and syncs each one's fields the same
  // way. The Cluster Service's error when a list fails.
  Status SyncListed();

 private:
  // Syncs a listed object's fields into the resource `id` when it is in an owned partition.
  void SyncListedObject(const arm::ResourceId& id, const clusterservice::ServiceObject& object);

  store::Store* const store_;
  clusterservice::Client* const cs_;
  Ownership* const ownership_;
  Counters* const counters_;
  const Logger* const logger_;
  metrics::Family<metrics::Histogram>* const upgrade_seconds_;
};

}  // namespace hcprp::backend
