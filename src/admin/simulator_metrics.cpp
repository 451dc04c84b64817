#include "admin/simulator_metrics.h"

#include <memory>

#include "core/json.h"

namespace hcprp::admin {

void RegisterSimulatorMetrics(metrics::Registry& registry,
                              std::function<http::Response(http::Request&&)> handle) {
  auto read = std::make_shared<std::function<json::object()>>([handle = std::move(handle)] {
    http::Response r = handle(http::MakeRequest(http::Verb::get, "/control/azure/metrics"));
    if (r.result() != http::StatusCode::ok) return json::object{};
    auto v = ParseJson(r.body());
    if (!v.ok() || !v->is_object()) return json::object{};
    return v->as_object();
  });
  auto one = [read](std::string_view field) {
    return [read, field = std::string(field)] {
      json::object m = (*read)();
      auto v = GetInt(m, field);
      if (!v) return std::vector<metrics::Sample>{};
      return std::vector<metrics::Sample>{{{}, static_cast<double>(*v)}};
    };
  };
  using metrics::Type;
  registry.AddCallback("hcprp_simulator_azure_calls_total",
                       "Calls the provisioning engine made to simulated Azure", Type::kCounter, {},
                       one("calls"));
  registry.AddCallback(
      "hcprp_simulator_azure_call_failures_total", "Failed calls to simulated Azure, by reason",
      Type::kCounter, {"reason"}, [read] {
        json::object m = (*read)();
        std::vector<metrics::Sample> out;
        for (auto [field, reason] : {std::pair{"throttled", "throttled"}, std::pair{"failures", "failed"},
                                     std::pair{"credential_failures", "invalid_credentials"}}) {
          if (auto v = GetInt(m, field)) out.push_back({{reason}, static_cast<double>(*v)});
        }
        return out;
      });
  registry.AddCallback(
      "hcprp_simulator_azure_requests_total",
      "Calls to simulated Azure, by service (resource type), call (create, delete, poll) and outcome",
      Type::kCounter, {"service", "call", "outcome"}, [read] {
        json::object m = (*read)();
        std::vector<metrics::Sample> out;
        const json::array* calls = GetArray(m, "calls_by_service");
        for (const auto& c : calls ? *calls : json::array{}) {
          const json::object* o = c.if_object();
          if (o == nullptr) continue;
          out.push_back({{std::string(GetString(*o, "service").value_or("")),
                          std::string(GetString(*o, "call").value_or("")),
                          std::string(GetString(*o, "outcome").value_or(""))},
                         static_cast<double>(GetInt(*o, "count").value_or(0))});
        }
        return out;
      });
  registry.AddCallback("hcprp_simulator_azure_operations_pending",
                       "Azure operations in flight in the simulated Azure (futures)", Type::kGauge, {},
                       one("operations_in_flight"));
  registry.AddCallback("hcprp_simulator_azure_resources", "Resources in the simulated Azure", Type::kGauge,
                       {}, one("resources"));
  registry.AddCallback("hcprp_simulator_machines", "Machines the provisioning engine tracks", Type::kGauge,
                       {}, one("machines"));
  registry.AddCallback("hcprp_simulator_orphaned_machines_total",
                       "Machine deletions skipped after invalid credentials outlasted the threshold",
                       Type::kCounter, {}, one("orphaned_machines"));
  registry.AddCallback("hcprp_simulator_orphaned_control_planes_total",
                       "Control plane cleanups skipped after invalid credentials outlasted the threshold",
                       Type::kCounter, {}, one("orphaned_control_planes"));
  registry.AddCallback("hcprp_simulator_first_party_group_deletions_total",
                       "Managed resource groups deleted by the first-party identity", Type::kCounter, {},
                       one("first_party_group_deletions"));
  registry.AddCallback("hcprp_simulator_reconciles_total", "Reconciles of the provisioning engine",
                       Type::kCounter, {}, one("reconciles"));
}

}  // namespace hcprp::admin
