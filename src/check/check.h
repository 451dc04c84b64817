// `hcprp check`: verifies the invariants of docs/architecture.md ("Invariants", 1-6, 9 and 10) against a
// store and a Cluster Service, for operators and for the end of every test that kills, faults or races
// something.
#pragma once

#include <chrono>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/result.h"
#include "store/store.h"

namespace hcprp::check {

// The invariants checked; each value is the invariant's number in docs/architecture.md.
enum class Invariant {
  kOneActiveOperation = 1,
  kProvisioningStateFollowsOperation = 2,
  kOperationErrorsComplete = 3,
  kOperationsEnd = 4,
  kDeletedResourcesGo = 5,
  kServiceObjectsMatchDocuments = 6,
  kNothingLeftInAzure = 9,
  kVersionsConsistent = 10,
};

struct InvariantInfo {
  Invariant invariant;
  std::string_view name;         // "one-active-operation", ...
  std::string_view description;  // what holds, in one sentence
};

// Every invariant checked, in number order.
std::span<const InvariantInfo> Invariants();
int InvariantNumber(Invariant invariant);
std::string_view InvariantName(Invariant invariant);
std::string_view InvariantDescription(Invariant invariant);
// Writes the invariant's number (as `hcprp check` prints it).
std::ostream& operator<<(std::ostream& out, Invariant invariant);

struct CheckOptions {
  // Cluster Service objects without a resource document younger than this are not violations yet
  // (a create in flight, or garbage collection not yet due). Zero checks them all.
  std::chrono::seconds gc_window{3600};
  std::chrono::minutes create_deadline{60};
  std::chrono::minutes update_deadline{60};
  std::chrono::hours delete_deadline{12};
  // A non-terminal operation whose status and resource conditions have not changed for this long is
  // reported as stuck (kOperationsEnd) long before its deadline. Zero turns the report off.
  std::chrono::seconds stuck_after{600};
  // When false, skips the invariants that need the Cluster Service (6, 9 and 10).
  bool check_cluster_service = true;
};

struct Violation {
  Invariant invariant = Invariant::kOneActiveOperation;
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
// reports what breaks an invariant. Errors reading the store or the Cluster Service are returned as
// errors, not violations.
Result<Report> RunCheck(store::Store& store, clusterservice::Client* cluster_service, const Clock& clock,
                        const CheckOptions& options);

// {"ok":..., "partitions":..., "violations":[{"invariant","subject","message"}]}
json::object ReportToJson(const Report& report);

}  // namespace hcprp::check
