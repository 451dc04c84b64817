#include "simulator/provisioner.h"

#include <algorithm>
#include <cmath>

namespace hcprp::simulator {

std::string_view OperationName(Operation op) {
  switch (op) {
    case Operation::kCreate:
      return "create";
    case Operation::kUpdate:
      return "update";
    case Operation::kDelete:
      return "delete";
    case Operation::kUpgrade:
      return "upgrade";
  }
  return "create";
}

Result<Operation> ParseOperation(std::string_view name) {
  if (name == "create") return Operation::kCreate;
  if (name == "update") return Operation::kUpdate;
  if (name == "delete") return Operation::kDelete;
  if (name == "upgrade") return Operation::kUpgrade;
  return Error::InvalidArgument("unknown operation '" + std::string(name) +
                                "' (create, update, delete, upgrade)");
}

int64_t NodePoolReplicas(const json::object& node_pool) {
  int64_t replicas = GetInt(node_pool, "replicas").value_or(0);
  if (const json::object* as = GetObject(node_pool, "autoscaling"))
    replicas = GetInt(*as, "min_replica").value_or(replicas);
  return std::max<int64_t>(replicas, 0);
}

std::string_view ProfileName(Profile p) {
  switch (p) {
    case Profile::kInstant:
      return "instant";
    case Profile::kDemo:
      return "demo";
    case Profile::kRealistic:
      return "realistic";
  }
  return "demo";
}

Result<Profile> ParseProfile(std::string_view name) {
  if (name == "instant") return Profile::kInstant;
  if (name == "demo") return Profile::kDemo;
  if (name == "realistic") return Profile::kRealistic;
  return Error::InvalidArgument("unknown profile '" + std::string(name) + "' (instant, demo, realistic)");
}

TimedProvisioner::TimedProvisioner(Timing timing, uint64_t seed)
    : timing_(timing), rng_(seed ? seed : std::random_device{}()) {}

Timing TimedProvisioner::timing() const {
  MutexLock lock(mu_);
  return timing_;
}

void TimedProvisioner::set_timing(Timing timing) {
  MutexLock lock(mu_);
  timing_ = timing;
}

Duration TimedProvisioner::Sample(double demo_seconds, double median_seconds, double p99_seconds) {
  MutexLock lock(mu_);
  double seconds = 0;
  switch (timing_.profile) {
    case Profile::kInstant:
      return Duration::zero();
    case Profile::kDemo:
      seconds = demo_seconds;
      break;
    case Profile::kRealistic: {
      // Log-normal with the given median and 99th percentile (z(0.99) = 2.326).
      double sigma = std::log(p99_seconds / median_seconds) / 2.326;
      std::lognormal_distribution<double> dist(std::log(median_seconds), sigma);
      seconds = dist(rng_);
      break;
    }
  }
  seconds *= std::max(0.0, timing_.time_scale);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

Duration TimedProvisioner::CredentialIssueTime() { return Sample(1, 10, 30); }

Duration TimedProvisioner::RevocationTime() { return Sample(2, 60, 180); }

Duration TimedProvisioner::ControlPlaneUpgradeTime() { return Sample(4, 1500, 2700); }

Duration TimedProvisioner::NodePoolUpgradeTime(int64_t replicas) {
  // A sum of per-machine draws; beyond kDrawn machines the drawn ones stand for the rest.
  constexpr int64_t kDrawn = 100;
  replicas = std::min<int64_t>(replicas, 100'000);  // keeps the product of durations in range
  const int64_t drawn = std::min(replicas, kDrawn);
  Duration total = Duration::zero();
  for (int64_t i = 0; i < drawn; ++i) total += Sample(2, 360, 720);
  return drawn == 0 ? total : total / drawn * replicas;
}

std::optional<Step> TimedProvisioner::Next(const ObjectInfo& o) {
  const std::string_view s = o.state;
  const bool cluster = o.kind == kCluster;
  const bool node_pool = o.kind == kNodePool;
  // Where an operation ends: success, or the state a fault asked for.
  auto finish = [&](std::string_view success) -> std::string {
    return std::string(o.failure_state.empty() ? success : o.failure_state);
  };
  switch (o.operation) {
    case Operation::kCreate:
      if (s == "validating") {
        return Step{cluster || node_pool ? "pending" : "installing", Sample(1, 15, 45)};
      }
      if (s == "pending") return Step{"installing", Sample(1, 40, 120)};
      if (s == "installing") {
        if (cluster) return Step{finish("ready"), Sample(6, 690, 1110)};
        if (node_pool) return Step{finish("ready"), Sample(4, 560, 800)};
        return Step{finish("ready"), Sample(1, 45, 120)};
      }
      return std::nullopt;
    case Operation::kUpdate:
    case Operation::kUpgrade:
      if (s == "validating_update") return Step{"pending_update", Sample(1, 10, 30)};
      if (s == "pending_update") return Step{"updating", Sample(1, 20, 60)};
      if (s == "updating" && o.operation == Operation::kUpgrade) {
        if (node_pool) return Step{finish("ready"), NodePoolUpgradeTime(NodePoolReplicas(*o.object))};
        return Step{finish("ready"), ControlPlaneUpgradeTime()};
      }
      if (s == "updating") {
        if (node_pool) return Step{finish("ready"), Sample(3, 360, 720)};
        if (cluster) return Step{finish("ready"), Sample(3, 240, 600)};
        return Step{finish("ready"), Sample(1, 30, 90)};
      }
      return std::nullopt;
    case Operation::kDelete:
      if (s == "uninstalling") {
        std::string next = o.failure_state.empty() ? std::string(kGone) : std::string(o.failure_state);
        if (cluster) return Step{next, Sample(4, 690, 1500)};
        if (node_pool) return Step{next, Sample(3, 600, 1200)};
        return Step{next, Sample(1, 30, 90)};
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace hcprp::simulator
