#include "simulator/simulator.h"

#include <charconv>
#include <mutex>
#include <optional>

#include "http/server.h"
#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/state_db.h"
#include "simulator/state_store.h"

namespace hcprp::simulator {

namespace {

// Forwards the engine's calls to the service; the service is set before the engine starts.
class ServiceHost final : public EngineHost {
 public:
  void set_service(Service* service) { service_ = service; }
  Status Transition(const std::string& href, const std::string& state, const std::string& error_code,
                    const std::string& error_message) override {
    return service_->Transition(href, state, error_code, error_message);
  }
  Status SetStatusFields(const std::string& href, const json::object& fields) override {
    return service_->SetStatusFields(href, fields);
  }

 private:
  Service* service_ = nullptr;
};

}  // namespace

// Destroyed in reverse order: the service goes before the engine it calls, the engine before the host.
struct Simulator::Parts {
  SystemClock system_clock;
  const Clock* clock = nullptr;
  std::unique_ptr<StateDb> state;  // the engine's and the service's, so destroyed last
  std::unique_ptr<TimedProvisioner> timed;
  ServiceHost host;
  std::unique_ptr<PluggedProvisioner> engine;
  Provisioner* provisioner = nullptr;
  std::unique_ptr<StateStore> store;
  std::optional<VersionCatalogue> versions;  // from versions_file; unset: the built-in catalogue
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Service> service;
  std::unique_ptr<http::Server> server;
  std::function<std::optional<http::Response>(const http::Request&)> extra_handler;
  const Logger* logger = nullptr;
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu
};

Status ApplyProfileFlag(SimulatorOptions& options, std::string_view profile) {
  auto p = ParseProfile(profile);
  if (!p.ok()) return p.error();
  options.profile = *p;
  return Status::Ok();
}

Status ApplyTimeScaleFlag(SimulatorOptions& options, std::string_view time_scale) {
  std::string s(time_scale);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0)) {
    return Error::InvalidArgument("--time-scale must be a non-negative number, got '" + s + "'");
  }
  options.time_scale = v;
  return Status::Ok();
}

Result<std::unique_ptr<Simulator>> Simulator::Start(const SimulatorOptions& options) {
  std::unique_ptr<Simulator> sim(new Simulator());
  sim->parts_ = std::make_unique<Parts>();
  Parts& p = *sim->parts_;
  p.clock = options.clock ? options.clock : &p.system_clock;
  p.extra_handler = options.extra_handler;
  p.logger = options.logger;
  p.timed = std::make_unique<TimedProvisioner>(Timing{options.profile, options.time_scale}, options.seed);
  p.provisioner = options.provisioner ? options.provisioner : p.timed.get();
  if (!options.data_dir.empty()) {
    auto state = StateDb::Open(options.data_dir);
    if (!state.ok()) return state.error();
    p.state = std::move(*state);
  }
  if (!options.provisioner && options.provisioner_factory) {
    ProvisionerContext ctx{p.clock,         options.logger,     p.state.get(),
                           options.profile, options.time_scale, options.seed};
    auto engine = options.provisioner_factory(ctx);
    if (!engine.ok()) return engine.error();
    p.engine = std::move(*engine);
    p.provisioner = p.engine->provisioner();
  }
  const bool timed = p.provisioner == p.timed.get();
  if (!options.versions_file.empty()) {
    auto versions = VersionCatalogue::Load(options.versions_file);
    if (!versions.ok()) return versions.error();
    p.versions = std::move(*versions);
  }
  p.store = p.state ? NewStateStore(p.state.get()) : NewMemoryStateStore();
  p.scheduler = std::make_unique<Scheduler>(p.clock);
  ServiceOptions so;
  so.clock = p.clock;
  so.provisioner = p.provisioner;
  so.timing = timed ? p.timed.get() : nullptr;
  so.store = p.store.get();
  so.scheduler = p.scheduler.get();
  so.logger = options.logger;
  so.event_history = options.event_history;
  so.seed = options.seed;
  so.versions = p.versions ? &*p.versions : nullptr;
  auto service = Service::Open(so);
  if (!service.ok()) return service.error();
  p.service = std::move(*service);
  p.scheduler->Start();
  if (p.engine) {
    p.host.set_service(p.service.get());
    p.engine->Start(&p.host);
  }
  if (options.serve_http) {
    http::ServerOptions ho;
    ho.listen = options.listen;
    ho.threads = options.threads;
    ho.max_body_bytes = options.max_body_bytes;
    ho.on_too_large = &Service::TooLarge;
    ho.server_header = "hcprp-cluster-service-simulator";
    Simulator* self = sim.get();
    auto server =
        http::Server::Start(ho, [self](http::Request&& req) { return self->Handle(std::move(req)); });
    if (!server.ok()) {
      sim->Stop();
      return server.error();
    }
    p.server = std::move(*server);
  }
  if (options.logger) {
    options.logger->Info("cluster service simulator started", {{"port", sim->port()},
                                                               {"profile", ProfileName(options.profile)},
                                                               {"time_scale", options.time_scale},
                                                               {"data_dir", options.data_dir}});
  }
  return sim;
}

Simulator::~Simulator() { Stop(); }

uint16_t Simulator::port() const { return parts_->server ? parts_->server->port() : 0; }

std::string Simulator::base_url() const {
  if (!parts_->server) return "";
  http::Endpoint ep = parts_->server->endpoint();
  if (ep.host == "0.0.0.0") ep.host = "127.0.0.1";
  if (ep.host == "::") ep.host = "::1";
  return "http://" + ep.ToString();
}

http::Response Simulator::Handle(http::Request&& request) {
  if (parts_->extra_handler) {
    if (auto r = parts_->extra_handler(request)) return std::move(*r);
  }
  if (parts_->engine) {
    if (auto r = parts_->engine->Handle(request)) return std::move(*r);
  }
  return parts_->service->Handle(std::move(request));
}

void Simulator::Stop() {
  if (!parts_) return;
  std::lock_guard lock(parts_->stop_mu);
  if (parts_->stopped) return;
  parts_->stopped = true;
  if (parts_->service) parts_->service->Shutdown();
  if (parts_->server) parts_->server->Stop(std::chrono::seconds(5));
  // The engine's workers call into the service: stop them while the service is still whole.
  if (parts_->engine) parts_->engine->Stop();
  if (parts_->scheduler) parts_->scheduler->Stop();
}

size_t Simulator::RunDueForTest() { return parts_->scheduler->RunDue(); }

Status Simulator::TransitionForTest(const std::string& href, const std::string& state) {
  return parts_->service->Transition(href, state);
}

}  // namespace hcprp::simulator
