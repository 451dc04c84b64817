// `hcprp check`: verifies the invariants of docs/architecture.md ("Invariants", 1-6) against a store
// and a Cluster Service, for operators and for the end of every test that kills, faults or races
// something.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::check {

struct CheckOptions {
  // Cluster Service objects without a resource document younger than this are not violations yet
  // (a create in flight, or garbage collection not yet due). Zero checks them all.
  std::chrono::seconds gc_window{3600};
  std::chrono::minutes create_deadline{60};
  std::chrono::minutes update_deadline{60};
  std::chrono::hours delete_deadline{12};
  // A non-terminal operation whose status and resource conditions have not changed for this long is
  // reported as stuck (invariant 4) long before its deadline. Zero turns the report off.
  std::chrono::seconds stuck_after{600};
  // When false, skips the invariants that need the Cluster Service (5 and 6).
  bool check_cluster_service = true;
};

struct Violation {
  int invariant = 0;    // 1..6, 9
  std::string subject;  // resource ID, operation ID or Cluster Service href
  std::string message;
};

struct Report {
  size_t partitions = 0;
  size_t resources = 0;
  size_t operations = 0;
  size_t service_objects = 0;
  std::vector<Violation> violations;
  bool ok() const { return violations.empty(); }
};

// Reads every partition of the resources container (and, unless disabled, every Cluster Service
// cluster and node pool and, when the Cluster Service is the simulator, its simulated Azure) and
// reports what breaks an invariant. Invariant 9: every Azure resource the service created (not the
// customer's) lies in the managed resource group of a cluster the Cluster Service still has. Errors reading
// the store or the Cluster Service are returned as errors, not violations.
Result<Report> RunCheck(store::Store& store, clusterservice::Client* cluster_service, const Clock& clock,
                        const CheckOptions& options);

// {"ok":..., "partitions":..., "violations":[{"invariant","subject","message"}]}
json::object ReportToJson(const Report& report);

}  // namespace hcprp::check
