#include "simulator/simulator.h"

#include <charconv>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/mutex.h"
#include "http/bearer.h"
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

bool IsControlPath(const http::Request& req) {
  std::string_view t = req.target();
  return t == "/control" || t.rfind("/control/", 0) == 0 || t.rfind("/control?", 0) == 0;
}

bool IsArmMetadataPath(const http::Request& req) {
  std::string_view t = req.target();
  t = t.substr(0, t.find('?'));
  return t == "/metadata/authentication" && req.method() == http::Verb::get;
}

http::Response ArmMetadata(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (file.empty() || !in) {
    return http::MakeResponse(http::StatusCode::not_found, R"({"error":"no ARM metadata document"})",
                              "application/json");
  }
  std::ostringstream body;
  body << in.rdbuf();
  return http::MakeResponse(http::StatusCode::ok, body.str(), "application/json");
}

// Compares in time independent of where the first difference is.
bool TokenMatches(std::string_view got, std::string_view expected) {
  if (expected.size() <= 7 || got.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < got.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ expected[i]);
  return diff == 0;
}

// The control listener's refusal of a request, judged on its headers alone (http::ServerOptions::screen):
// before any of its body is read or "100 Continue" is sent. Another path is 404, a control call without
// the bearer token 401; nullopt lets the request through to the handler.
std::optional<http::Response> ControlRefusal(const http::Request& header, std::string_view expected) {
  if (IsArmMetadataPath(header)) return std::nullopt;
  if (!IsControlPath(header)) {
    return http::MakeResponse(http::StatusCode::not_found, R"({"error":"only /control here"})",
                              "application/json");
  }
  if (TokenMatches(http::BearerToken(header), expected)) return std::nullopt;
  http::Response res =
      http::MakeResponse(http::StatusCode::unauthorized,
                         R"({"error":"the control API requires its bearer token"})", "application/json");
  res.set(http::Field::www_authenticate, "Bearer");
  return res;
}

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
  std::unique_ptr<http::Server> control_server;
  bool tls = false;
  std::function<std::optional<http::Response>(const http::Request&)> extra_handler;
  const Logger* logger = nullptr;
  Mutex stop_mu;
  bool stopped HCPRP_GUARDED_BY(stop_mu) = false;
};

Status ApplyProfileFlag(SimulatorOptions& options, std::string_view profile) {
  HCPRP_ASSIGN_OR_RETURN(auto p, ParseProfile(profile));
  options.profile = p;
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
    HCPRP_ASSIGN_OR_RETURN(auto state, StateDb::Open(options.data_dir));
    p.state = std::move(state);
  }
  if (!options.provisioner && options.provisioner_factory) {
    ProvisionerContext ctx{p.clock,         options.logger,     p.state.get(),
                           options.profile, options.time_scale, options.seed};
    HCPRP_ASSIGN_OR_RETURN(auto engine, options.provisioner_factory(ctx));
    p.engine = std::move(engine);
    p.provisioner = p.engine->provisioner();
  }
  const bool timed = p.provisioner == p.timed.get();
  if (!options.versions_file.empty()) {
    HCPRP_ASSIGN_OR_RETURN(auto versions, VersionCatalogue::Load(options.versions_file));
    p.versions = std::move(versions);
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
  HCPRP_ASSIGN_OR_RETURN(auto service, Service::Open(so));
  p.service = std::move(service);
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
    ho.tls = options.tls;
    p.tls = options.tls.context != nullptr;
    Simulator* self = sim.get();
    const bool control_apart = options.control_listen.has_value();
    auto server = http::Server::Start(ho, [self, control_apart](http::Request&& req) {
      if (control_apart && req.method() != http::Verb::get && IsControlPath(req)) {
        return http::MakeResponse(http::StatusCode::not_found,
                                  R"({"error":"the control API has its own listener"})", "application/json");
      }
      return self->Handle(std::move(req));
    });
    if (!server.ok()) {
      sim->Stop();
      return server.error();
    }
    p.server = std::move(*server);
    if (control_apart) {
      http::ServerOptions co;
      co.listen = *options.control_listen;
      co.threads = 2;
      co.max_connections = 256;
      co.max_body_bytes = options.max_body_bytes;
      co.server_header = ho.server_header;
      co.screen = [expected = options.control_token](const http::Request& header) {
        return ControlRefusal(header, expected);
      };
      // Only what ControlRefusal let through reaches the handler.
      auto control =
          http::Server::Start(co, [self, metadata = options.arm_metadata_file](http::Request&& req) {
            if (IsArmMetadataPath(req)) return ArmMetadata(metadata);
            return self->Handle(std::move(req));
          });
      if (!control.ok()) {
        sim->Stop();
        return control.error();
      }
      p.control_server = std::move(*control);
    }
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
  return (parts_->tls ? "https://" : "http://") + ep.ToString();
}

std::string Simulator::control_url() const {
  if (!parts_->control_server) return "";
  return "http://" + parts_->control_server->endpoint().ToString();
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

const UpdateService& Simulator::updates() const { return parts_->service->updates(); }

void Simulator::Stop() {
  if (!parts_) return;
  MutexLock lock(parts_->stop_mu);
  if (parts_->stopped) return;
  parts_->stopped = true;
  if (parts_->service) parts_->service->Shutdown();
  if (parts_->control_server) parts_->control_server->Stop(std::chrono::seconds(2));
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
