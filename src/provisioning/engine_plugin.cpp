#include "provisioning/engine_plugin.h"

#include <memory>
#include <utility>

#include "provisioning/azure.h"
#include "provisioning/engine.h"
#include "provisioning/handler.h"

namespace hcprp::provisioning {

namespace {

// Forwards the engine's state changes and conditions to the simulator.
class HostSink final : public StateSink {
 public:
  HostSink(simulator::EngineHost* host, const Logger* logger) : host_(host), logger_(logger) {}
  Status Transition(const std::string& href, const std::string& state, const std::string& code,
                    const std::string& message) override {
    return host_->Transition(href, state, code, message);
  }
  void PublishStatus(const std::string& href, const json::object& fields) override {
    Status st = host_->SetStatusFields(href, fields);
    // An object already gone has no status left to update.
    if (!st.ok() && st.error().code() != ErrorCode::kNotFound && logger_) {
      logger_->Warn("cannot publish conditions", {{"href", href}, {"error", st.error().ToString()}});
    }
  }

 private:
  simulator::EngineHost* host_;
  const Logger* logger_;
};

class EnginePlugin final : public simulator::PluggedProvisioner {
 public:
  EnginePlugin(std::unique_ptr<SimulatedAzure> azure, std::unique_ptr<Engine> engine, const Logger* logger)
      : logger_(logger),
        azure_(std::move(azure)),
        engine_(std::move(engine)),
        handler_(engine_.get(), azure_.get()) {}
  ~EnginePlugin() override { engine_->Stop(); }

  simulator::Provisioner* provisioner() override { return engine_.get(); }
  void Start(simulator::EngineHost* host) override {
    sink_ = std::make_unique<HostSink>(host, logger_);
    engine_->Attach(sink_.get());
    // The service announced every object it has before Start: what else the state holds is what a
    // crash left of objects already gone.
    engine_->DeleteUnannounced();
    engine_->Start();
  }
  void Stop() override { engine_->Stop(); }
  std::optional<http::Response> Handle(const http::Request& request) override {
    return handler_.Handle(request);
  }

 private:
  const Logger* logger_;
  std::unique_ptr<SimulatedAzure> azure_;  // outlives the engine that calls it
  std::unique_ptr<HostSink> sink_;
  std::unique_ptr<Engine> engine_;
  AzureHandler handler_;
};

}  // namespace

simulator::ProvisionerFactory EngineFactory(EnginePluginOptions options) {
  return [options](const simulator::ProvisionerContext& ctx)
             -> Result<std::unique_ptr<simulator::PluggedProvisioner>> {
    AzureOptions ao;
    ao.clock = ctx.clock;
    ao.logger = ctx.logger;
    ao.profile = ctx.profile;
    ao.time_scale = ctx.time_scale;
    ao.state = ctx.state;
    ao.seed = ctx.seed;
    HCPRP_ASSIGN_OR_RETURN(auto azure, SimulatedAzure::Open(ao));
    EngineOptions eo;
    eo.clock = ctx.clock;
    eo.azure = azure.get();
    eo.logger = ctx.logger;
    eo.state = ctx.state;
    eo.time_scale = ctx.time_scale;
    eo.orphan_threshold = options.orphan_threshold;
    // As the timed provisioner's validating step: none, about a second, about half a minute.
    switch (ctx.profile) {
      case simulator::Profile::kInstant:
        eo.validation_time = Duration::zero();
        break;
      case simulator::Profile::kDemo:
        eo.validation_time = std::chrono::seconds(1);
        break;
      case simulator::Profile::kRealistic:
        eo.validation_time = std::chrono::seconds(30);
        break;
    }
    eo.concurrency = options.concurrency;
    // Control plane upgrades take what the timed provisioner's profile says (the one place of those
    // durations); the sampler lives as long as the engine's options.
    auto timing = std::make_shared<simulator::TimedProvisioner>(
        simulator::Timing{ctx.profile, ctx.time_scale}, ctx.seed);
    eo.control_plane_upgrade_time = [timing] { return timing->ControlPlaneUpgradeTime(); };
    HCPRP_ASSIGN_OR_RETURN(auto engine, Engine::Open(eo));
    return std::unique_ptr<simulator::PluggedProvisioner>(
        std::make_unique<EnginePlugin>(std::move(azure), std::move(engine), ctx.logger));
  };
}

}  // namespace hcprp::provisioning
