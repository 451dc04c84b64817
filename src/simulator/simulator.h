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
// core and http only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "http/message.h"
#include "http/url.h"
#include "simulator/provisioner.h"

namespace hcprp::simulator {

struct SimulatorOptions {
  http::Endpoint listen{"127.0.0.1", 0};  // port 0: ephemeral, see Simulator::port()
  std::string data_dir;                   // empty: nothing survives a restart
  Profile profile = Profile::kDemo;
  double time_scale = 1.0;         // multiplies every duration of the profile
  const Clock* clock = nullptr;    // default: the system clock; not owned
  const Logger* logger = nullptr;  // may be null; not owned
  // Replaces the timed state machine (e.g. by a provisioning engine); not owned. When set, profile and
  // time_scale only affect credential revocation through this provisioner.
  Provisioner* provisioner = nullptr;
  size_t event_history = 10'000;
  int threads = 8;  // HTTP handler threads kept warm
  size_t max_body_bytes = 4 * 1024 * 1024;
  uint64_t seed = 0;       // randomness of timing and faults; 0 = random
  bool serve_http = true;  // false: no socket, use Handle() (for in-process tests)
};

// Parses "--profile" and "--time-scale" values into options; InvalidArgument on bad input.
Status ApplyProfileFlag(SimulatorOptions& options, std::string_view profile);
Status ApplyTimeScaleFlag(SimulatorOptions& options, std::string_view time_scale);

// Thread-safe.
class Simulator {
 public:
  static Result<std::unique_ptr<Simulator>> Start(const SimulatorOptions& options);
  ~Simulator();  // Stop()

  // The bound port (0 when serve_http is false) and "http://host:port" for clients.
  uint16_t port() const;
  std::string base_url() const;

  // The request handler without a socket.
  http::Response Handle(http::Request&& request);

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
