// The fault injector: HTTP faults drawn per call, provisioning faults drawn per operation.
#include <algorithm>
#include <thread>

#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

std::optional<Service::ProvisioningFault> Service::DrawProvisioningFaultLocked(std::string_view kind,
                                                                               Operation op) {
  MutexLock lock(faults_mu_);
  for (auto it = provisioning_faults_.begin(); it != provisioning_faults_.end(); ++it) {
    auto& f = *it;
    if (!f.kinds.empty() && std::find(f.kinds.begin(), f.kinds.end(), kind) == f.kinds.end()) continue;
    // An upgrade is an update too: "update" rules fail it as well, "upgrade" rules fail only upgrades.
    auto names = [&](std::string_view name) {
      return std::find(f.operations.begin(), f.operations.end(), name) != f.operations.end();
    };
    if (!names(OperationName(op)) && !(op == Operation::kUpgrade && names(OperationName(Operation::kUpdate))))
      continue;
    if (f.remaining == 0) continue;
    if (f.fraction < 1.0 && std::uniform_real_distribution<double>(0, 1)(rng_) >= f.fraction) continue;
    ProvisioningFault hit = f;
    if (f.remaining > 0 && --f.remaining == 0) provisioning_faults_.erase(it);
    return hit;
  }
  return std::nullopt;
}

void Service::InterruptibleSleep(std::chrono::milliseconds d) {
  MutexLock lock(sleep_mu_);
  shutdown_cv_.WaitFor(lock, d, [this] { return shutdown_.load(); });
}

Service::HttpFault Service::DrawHttpFault(const http::Request& req, std::string_view path, int* status,
                                          std::chrono::milliseconds* delay, bool* hang) {
  MutexLock lock(faults_mu_);
  const HttpFaults& f = http_faults_;
  *delay = std::chrono::milliseconds(0);
  *hang = false;
  *status = f.status;
  if (path.compare(0, f.path_prefix.size(), f.path_prefix) != 0) return HttpFault::kNone;
  if (!f.methods.empty() && std::none_of(f.methods.begin(), f.methods.end(), [&](const std::string& m) {
        return EqualsIgnoreCase(m, req.method_string());
      })) {
    return HttpFault::kNone;
  }
  auto roll = [&](double p) HCPRP_REQUIRES(faults_mu_) {
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  };
  if (roll(f.hang_fraction)) {
    *hang = true;
    *delay = std::min(std::chrono::milliseconds(f.hang_ms), options_.max_hang);
    return HttpFault::kNone;
  }
  if (roll(f.delay_fraction)) *delay = std::chrono::milliseconds(f.delay_ms);
  if (http_faults_.error_count > 0) {
    --http_faults_.error_count;
    return HttpFault::kErrorBefore;
  }
  if (roll(f.error_fraction)) return HttpFault::kErrorBefore;
  if (http_faults_.error_after_count > 0) {
    --http_faults_.error_after_count;
    return HttpFault::kErrorAfter;
  }
  if (roll(f.error_after_fraction)) return HttpFault::kErrorAfter;
  return HttpFault::kNone;
}

}  // namespace hcprp::simulator
