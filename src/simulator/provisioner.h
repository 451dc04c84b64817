// The seam between the Cluster Service simulator and whatever decides how its objects move through
// their states. The simulator owns the objects, persistence, events and timers; a Provisioner only
// answers "after how long, and to which state, does this object move next?".
//
// TimedProvisioner (below) walks every object through the Cluster Service's states (docs/architecture.md,
// "Cluster Service object states") with durations from a timing profile. A provisioning engine can replace
// it: either by answering Next() from its own model, or by answering nullopt (the object rests) and driving
// states itself through Service::Transition() from its own threads.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/json.h"
#include "core/mutex.h"
#include "core/result.h"

namespace hcprp::simulator {

// The operation an object is going through. An upgrade is an update of a cluster or node pool that
// changes the version it runs (status.version_history): a control plane upgrade, or a node pool's
// rolling replacement of its machines.
enum class Operation { kCreate, kUpdate, kDelete, kUpgrade };
std::string_view OperationName(Operation op);  // "create", "update", "delete", "upgrade"
Result<Operation> ParseOperation(std::string_view name);

// Object kinds, as they appear in "kind".
inline constexpr std::string_view kCluster = "Cluster";
inline constexpr std::string_view kNodePool = "NodePool";
inline constexpr std::string_view kExternalAuth = "ExternalAuth";
// Break-glass credentials are driven by the simulator itself (issuing -> issued -> expired;
// awaiting_revocation -> revoked), not by the Provisioner.
inline constexpr std::string_view kCredential = "BreakGlassCredential";

// The pseudo-state of an object that is gone (its uninstall finished).
inline constexpr std::string_view kGone = "deleted";

// What a provisioner sees of an object. Valid only during the call.
struct ObjectInfo {
  std::string_view kind;
  std::string_view href;
  std::string_view state;  // the state the object just entered
  Operation operation;
  // When a fault was injected into this operation: the state it must end in ("error" or
  // "recoverable_error") instead of succeeding; empty otherwise.
  std::string_view failure_state;
  const json::object* object;  // the full object
  // Clusters and node pools: the raw version ("4.21.3") a create or an upgrade installs, or the one the
  // object runs during other operations; empty when unknown.
  std::string_view version = {};
  // Identifies the operation: every operation of an object has another one (increasing).
  uint64_t operation_id = 0;
};

// A node pool's replica count: autoscaling.min_replica when it autoscales, else replicas (never below 0).
int64_t NodePoolReplicas(const json::object& node_pool);

struct Step {
  std::string state;  // the next state, or kGone
  Duration after{};   // counted from when the object entered its current state
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  // The step after `object` entered object.state, or nullopt when it rests there (ready, error, or an
  // engine that drives it asynchronously). Called with the simulator's lock held: must not call back
  // into the simulator. Thread-safe.
  virtual std::optional<Step> Next(const ObjectInfo& object) = 0;
  // How long issuing a break-glass credential and revoking a cluster's credentials take.
  virtual Duration CredentialIssueTime() = 0;
  virtual Duration RevocationTime() = 0;
};

// instant: every step as fast as possible (each state still observable as an event);
// demo: a few seconds per step; realistic: the durations of docs/architecture.md ("Cluster Service
// object states") drawn from log-normal distributions (cluster create median ~12.5 min, p99 ~20 min; node
// pool create ~10 min; deletes median ~11.5 min, p99 ~25 min; control plane upgrade median ~25 min, p99
// ~45 min; a node pool upgrade ~6 min per machine). Every duration is multiplied by time_scale (0.01
// turns the realistic 12 minutes into 7 seconds).
enum class Profile { kInstant, kDemo, kRealistic };
std::string_view ProfileName(Profile p);
Result<Profile> ParseProfile(std::string_view name);

struct Timing {
  Profile profile = Profile::kDemo;
  double time_scale = 1.0;
};

// Thread-safe; the timing can change at any time and applies to the next step planned.
class TimedProvisioner final : public Provisioner {
 public:
  explicit TimedProvisioner(Timing timing, uint64_t seed = 0);

  std::optional<Step> Next(const ObjectInfo& object) override;
  Duration CredentialIssueTime() override;
  Duration RevocationTime() override;
  // A control plane upgrade: instant 0, demo 4 s, realistic median ~25 min (p99 ~45 min); scaled.
  Duration ControlPlaneUpgradeTime();
  // A node pool's rolling upgrade of `replicas` machines, one after the other (surge 1, unavailable 0):
  // per machine demo 2 s, realistic median ~6 min (p99 ~12 min); scaled.
  Duration NodePoolUpgradeTime(int64_t replicas);

  Timing timing() const;
  void set_timing(Timing timing);

 private:
  // Duration of one phase: median and p99 (for the realistic profile) or fixed (demo).
  Duration Sample(double demo_seconds, double median_seconds, double p99_seconds);

  mutable Mutex mu_;
  Timing timing_ HCPRP_GUARDED_BY(mu_);
  std::mt19937_64 rng_ HCPRP_GUARDED_BY(mu_);
};

}  // namespace hcprp::simulator
