// The Cluster Service simulator's engine counters (its /control/azure/metrics answer) as Prometheus
// metrics, read at scrape time through the simulator's request handler (no socket):
//   hcprp_simulator_azure_calls_total, hcprp_simulator_azure_call_failures_total{reason}
//   (throttled, failed, invalid_credentials), hcprp_simulator_azure_operations_pending (futures),
//   hcprp_simulator_azure_resources, hcprp_simulator_machines, hcprp_simulator_orphaned_machines_total,
//   hcprp_simulator_orphaned_control_planes_total, hcprp_simulator_first_party_group_deletions_total,
//   hcprp_simulator_reconciles_total.
// With the timed provisioner (no engine) the families are present and empty.
#pragma once

#include <functional>

#include "http/message.h"
#include "metrics/registry.h"

namespace hcprp::admin {

// `handle` must stay callable as long as the registry is scraped.
void RegisterSimulatorMetrics(metrics::Registry& registry,
                              std::function<http::Response(http::Request&&)> handle);

}  // namespace hcprp::admin
