#include "simulator/simulator.h"

#include <charconv>
#include <mutex>

#include "http/server.h"
#include "simulator/scheduler.h"
#include "simulator/service.h"
#include "simulator/state_store.h"

namespace hcprp::simulator {

struct Simulator::Parts {
  SystemClock system_clock;
  const Clock* clock = nullptr;
  std::unique_ptr<TimedProvisioner> timed;
  Provisioner* provisioner = nullptr;
  std::unique_ptr<StateStore> store;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Service> service;
  std::unique_ptr<http::Server> server;
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
  p.timed = std::make_unique<TimedProvisioner>(Timing{options.profile, options.time_scale}, options.seed);
  p.provisioner = options.provisioner ? options.provisioner : p.timed.get();
  if (options.data_dir.empty()) {
    p.store = NewMemoryStateStore();
  } else {
    auto store = OpenSqliteStateStore(options.data_dir);
    if (!store.ok()) return store.error();
    p.store = std::move(*store);
  }
  p.scheduler = std::make_unique<Scheduler>(p.clock);
  ServiceOptions so;
  so.clock = p.clock;
  so.provisioner = p.provisioner;
  so.timing = options.provisioner ? nullptr : p.timed.get();
  so.store = p.store.get();
  so.scheduler = p.scheduler.get();
  so.logger = options.logger;
  so.event_history = options.event_history;
  so.seed = options.seed;
  auto service = Service::Open(so);
  if (!service.ok()) return service.error();
  p.service = std::move(*service);
  p.scheduler->Start();
  if (options.serve_http) {
    http::ServerOptions ho;
    ho.listen = options.listen;
    ho.threads = options.threads;
    ho.max_body_bytes = options.max_body_bytes;
    ho.on_too_large = &Service::TooLarge;
    ho.server_header = "hcprp-cluster-service-simulator";
    Service* svc = p.service.get();
    auto server = http::Server::Start(ho, [svc](http::Request&& req) { return svc->Handle(std::move(req)); });
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
  return parts_->service->Handle(std::move(request));
}

void Simulator::Stop() {
  if (!parts_) return;
  std::lock_guard lock(parts_->stop_mu);
  if (parts_->stopped) return;
  parts_->stopped = true;
  if (parts_->service) parts_->service->Shutdown();
  if (parts_->server) parts_->server->Stop(std::chrono::seconds(5));
  if (parts_->scheduler) parts_->scheduler->Stop();
}

size_t Simulator::RunDueForTest() { return parts_->scheduler->RunDue(); }

Status Simulator::TransitionForTest(const std::string& href, const std::string& state) {
  return parts_->service->Transition(href, state);
}

}  // namespace hcprp::simulator
