// The Cluster Service simulator: an OCM-style REST service under /api/aro_hcp/v1alpha1 that moves
// clusters, node pools and external auths through the Cluster Service's states with realistic
// timing, persists them across restarts, streams every state change as events and lets tests
// inject faults through /control (README.md in this folder documents the API).
//
//   SimulatorOptions o;
//   o.listen = {"127.0.0.1", 0};
//   o.data_dir = "/var/lib/hcprp/cs";
//   auto sim = Simulator::Start(o);          // serving on (*sim)->port()
//   ...
//   (*sim)->Stop();
//
// `hcprp clusters-service` and `hcprp serve` both start it through Start(); the simulator depends on
// core and http only. A provisioning engine plugs in through SimulatorOptions::provisioner_factory,
// filled in by the composition root, so that the simulator never depends on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/result.h"
#include "http/message.h"
#include "http/server.h"
#include "http/url.h"
#include "simulator/provisioner.h"

namespace hcprp::simulator {

class StateDb;
class UpdateService;

// What the simulator offers a plugged-in provisioning engine. Thread-safe; must not be called with a lock
// held that Provisioner::Next() takes.
class EngineHost {
 public:
  virtual ~EngineHost() = default;
  // Service::Transition: moves an object to `state` now (kGone removes it).
  virtual Status Transition(const std::string& href, const std::string& state, const std::string& error_code,
                            const std::string& error_message) = 0;
  // Service::SetStatusFields: merges `fields` (e.g. "conditions") into the object's status.
  virtual Status SetStatusFields(const std::string& href, const json::object& fields) = 0;
};

// A provisioning engine that replaces the timed state machine and lives as long as the simulator.
// Lifecycle, driven by Simulator: built by a ProvisionerFactory, Start(host) once the service is open
// (and has announced every object it loaded), Stop() before the service stops (after it, no call into
// the host), destroyed after the service. It persists in ProvisionerContext::state, committing each of
// its steps as it makes it.
class PluggedProvisioner {
 public:
  virtual ~PluggedProvisioner() = default;
  // Owned by this object; valid until it is destroyed.
  virtual Provisioner* provisioner() = 0;
  // REQUIRES: called once. `host` outlives Stop().
  virtual void Start(EngineHost* host) = 0;
  // Stops the engine's threads. Idempotent.
  virtual void Stop() = 0;
  // The engine's own HTTP routes, tried before the simulator's; nullopt: not one of them.
  virtual std::optional<http::Response> Handle(const http::Request& /*request*/) { return std::nullopt; }
};

// What a factory learns of the simulator it builds an engine for.
struct ProvisionerContext {
  const Clock* clock = nullptr;  // never null
  const Logger* logger = nullptr;
  StateDb* state = nullptr;  // the simulator's database; null: nothing persists
  Profile profile = Profile::kDemo;
  double time_scale = 1.0;
  uint64_t seed = 0;
};
using ProvisionerFactory =
    std::function<Result<std::unique_ptr<PluggedProvisioner>>(const ProvisionerContext& context)>;

struct SimulatorOptions {
  http::Endpoint listen{"127.0.0.1", 0};  // port 0: ephemeral, see Simulator::port()
  std::string data_dir;                   // empty: nothing survives a restart
  std::string versions_file;              // a version catalogue (versions.json's form); empty: built in
  Profile profile = Profile::kDemo;
  double time_scale = 1.0;         // multiplies every duration of the profile
  const Clock* clock = nullptr;    // default: the system clock; not owned
  const Logger* logger = nullptr;  // may be null; not owned
  // Replaces the timed state machine (e.g. by a provisioning engine); not owned. When set, profile and
  // time_scale only affect credential revocation through this provisioner.
  Provisioner* provisioner = nullptr;
  // When set (and provisioner is not), builds the engine that replaces the timed state machine
  // (provisioning::EngineFactory); the simulator owns it and drives its lifecycle.
  ProvisionerFactory provisioner_factory;
  // Tried before the simulator's own routes (after the engine's); nullopt: not handled.
  std::function<std::optional<http::Response>(const http::Request&)> extra_handler;
  size_t event_history = 10'000;
  int threads = 8;  // HTTP handler threads kept warm
  size_t max_body_bytes = 4 * 1024 * 1024;
  uint64_t seed = 0;       // randomness of timing and faults; 0 = random
  bool serve_http = true;  // false: no socket, use Handle() (for in-process tests)
  // TLS of the Cluster Service listener; with tls.context built on a client CA, callers need a client
  // certificate (mutual TLS, as between a resource provider and the Cluster Service).
  http::ServerTls tls;
  // When set, the /control API that changes things (faults, timing, simulated Azure) moves to a listener
  // of its own that requires "Authorization: Bearer <control_token>"; the main listener then answers only
  // GETs under /control (health and read-only views, used by `hcprp check`).
  std::optional<http::Endpoint> control_listen;
  std::string control_token;
  // A stand-in for ARM's client-certificate metadata endpoint: the control listener answers
  // GET /metadata/authentication with this file (read at each request; public, as ARM's is: no token).
  // Empty: 404.
  std::string arm_metadata_file;
};

// Parses "--profile" and "--time-scale" values into options; InvalidArgument on bad input.
Status ApplyProfileFlag(SimulatorOptions& options, std::string_view profile);
Status ApplyTimeScaleFlag(SimulatorOptions& options, std::string_view time_scale);

// Thread-safe.
class Simulator {
 public:
  static Result<std::unique_ptr<Simulator>> Start(const SimulatorOptions& options);
  ~Simulator();  // Stop()

  // The bound port (0 when serve_http is false) and "http(s)://host:port" for clients.
  uint16_t port() const;
  std::string base_url() const;
  // "http://host:port" of the /control listener; empty without one.
  std::string control_url() const;

  // The request handler without a socket.
  http::Response Handle(http::Request&& request);
  // The update service (update_service.h): the version catalogue now, its edges and tips. Valid as
  // long as the simulator.
  const UpdateService& updates() const;

  // Stops serving: long-polls answer at once, in-flight requests finish, timers stop. Objects and
  // their transitions in progress stay in the data dir and resume at the next Start. Idempotent.
  void Stop();

  // Runs the transitions that are due by the clock now (those that become due while running too);
  // for tests that move a FakeClock. Returns how many ran.
  size_t RunDueForTest();
  // Moves an object to a state, as an external provisioning engine would (see Service::Transition).
  Status TransitionForTest(const std::string& href, const std::string& state);

 private:
  Simulator() = default;
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace hcprp::simulator
