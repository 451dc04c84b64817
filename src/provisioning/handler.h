// HTTP visibility and control for the simulated Azure and the provisioning engine, as a function from
// request to response that the simulator mounts in front of its own routes:
//
//   GET    /api/aro_hcp/v1alpha1/clusters/{id}/azure_resources
//          the engine's view of the cluster (conditions, control plane, node pools, machines, futures)
//          and the Azure resources of its managed resource group
//   GET    /control/azure/resources[?prefix=/subscriptions/...]   every simulated resource (or below prefix)
//   POST   /control/azure/identities/delete        {"resource_id": "..."}  the customer deletes an identity
//   POST   /control/azure/identities/permissions   {"resource_id": "...", "granted": false}
//   GET    /control/azure/faults, POST /control/azure/faults, DELETE /control/azure/faults
//          POST body: {"resource_type": "virtualMachine" (default all), "operation": "create"|"delete",
//          "kind": "fail"|"throttle", "count": N (default 1) | "fraction": f, "code", "message",
//          "retry_after_seconds"}  -> {"id"}
//   GET    /control/azure/metrics                  engine counters
#pragma once

#include <optional>

#include "http/message.h"
#include "provisioning/azure.h"
#include "provisioning/engine.h"

namespace hcprp::provisioning {

// Thread-safe; engine and azure are not owned and must outlive it.
class AzureHandler {
 public:
  AzureHandler(Engine* engine, SimulatedAzure* azure) : engine_(engine), azure_(azure) {}
  // nullopt when the request is not for one of the paths above.
  std::optional<http::Response> Handle(const http::Request& request) const;

 private:
  Engine* engine_;
  SimulatedAzure* azure_;
};

}  // namespace hcprp::provisioning
