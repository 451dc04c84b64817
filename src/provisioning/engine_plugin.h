// Plugs the provisioning engine and its simulated Azure into the Cluster Service simulator:
//
//   simulator::SimulatorOptions o;
//   o.provisioner_factory = provisioning::EngineFactory({.orphan_threshold = std::chrono::minutes(2)});
//   auto sim = simulator::Simulator::Start(o);
//
// The factory opens SimulatedAzure and Engine with the simulator's clock, data dir, profile and time
// scale, moves objects through Service::Transition, publishes rolled-up conditions into status.conditions
// (Service::SetStatusFields) and serves the AzureHandler routes in front of the simulator's own.
#pragma once

#include <chrono>

#include "core/clock.h"
#include "simulator/simulator.h"

namespace hcprp::provisioning {

struct EnginePluginOptions {
  // How long deletions may fail on invalid credentials before they are orphaned; like every simulated
  // duration, multiplied by the simulator's time scale.
  Duration orphan_threshold = std::chrono::minutes(10);
  int concurrency = 10;
};

simulator::ProvisionerFactory EngineFactory(EnginePluginOptions options);

}  // namespace hcprp::provisioning
