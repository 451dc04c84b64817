// hcprp: the resource provider's programs in one binary. This file is the composition root: it reads
// the configuration, builds the clock, store, Cluster Service client, frontend, backend and simulator,
// and wires them together. Nothing else in hcprp creates these parts.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "admin/admin_api.h"
#include "admin/live_view.h"
#include "admin/simulator_metrics.h"
#include "app/config.h"
#include "arm/cloud_error.h"
#include "arm/store_indexes.h"
#include "backend/backend.h"
#include "backend/http_notifier.h"
#include "check/check.h"
#include "clusterservice/http_client.h"
#include "core/log.h"
#include "core/steady_wall_clock.h"
#include "core/uuid.h"
#include "frontend/frontend.h"
#include "http/server.h"
#include "metrics/registry.h"
#include "provisioning/engine_plugin.h"
#include "simulator/simulator.h"
#include "store/metrics_store.h"
#include "store/store.h"
#include "store/write_health.h"
#include "tls/arm_metadata.h"
#include "tls/arm_trust.h"
#include "tls/atomic_file.h"
#include "tls/context.h"
#include "tls/local_ca.h"
#include "tls/peer_certificate.h"

namespace hcprp::app {
namespace {

// Blocks SIGINT and SIGTERM in every thread created from now on; WaitForSignal() then receives them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int WaitForSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

// The parts a process runs, owned in the order they must be torn down (reverse of declaration).
struct Parts {
  std::unique_ptr<http::Client> metadata_http;
  std::unique_ptr<tls::ArmMetadataFollower> arm_metadata;  // writes the file arm_auth reads
  std::unique_ptr<tls::ArmAuthenticator> arm_auth;
  std::unique_ptr<simulator::Simulator> sim;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<store::MetricsStore> metered;     // wraps store, counting calls
  std::unique_ptr<store::WriteHealthStore> writes;  // wraps metered; what frontend and backend use
  std::unique_ptr<clusterservice::HttpClient> cs;
  std::unique_ptr<http::Client> notify_http;
  std::unique_ptr<backend::HttpNotifier> notifier;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<frontend::Frontend> frontend;
  std::unique_ptr<http::Server> server;
  std::unique_ptr<admin::LiveView> live;
  std::unique_ptr<admin::AdminApi> admin;
  std::unique_ptr<http::Server> admin_server;
};

class Runner {
 public:
  explicit Runner(Config c)
      : config_(std::move(c)),
        logger_(std::make_shared<StreamLogSink>(stderr), &clock_,
                ParseLogLevel(config_.log_level).value_or(LogLevel::kInfo), "hcprp") {}

  int Fail(const std::string& what, const Error& e) {
    std::cerr << "hcprp: " << what << ": " << e.message() << "\n";
    return 1;
  }

  // Resolves the TLS files: the flags' files, the rest from --tls-dir (created on first start).
  // With --insecure-http nothing is created and every listener must be on loopback.
  Status PrepareTls(const std::vector<std::string>& listen_addresses) {
    if (config_.insecure_http) {
      for (const auto& a : listen_addresses) {
        HCPRP_ASSIGN_OR_RETURN(auto ep, http::ParseListenAddress(a));
        if (!IsLoopback(ep.host)) {
          return Error::InvalidArgument("--insecure-http listens on loopback addresses only, not " + a);
        }
      }
    }
    if (config_.tls_dir.empty()) config_.tls_dir = (std::filesystem::path(config_.data_dir) / "tls").string();
    const bool all_given = !config_.tls_cert.empty() && !config_.tls_key.empty() && !config_.tls_ca.empty() &&
                           !config_.arm_trusted_certs.empty() && !config_.cs_client_cert.empty() &&
                           !config_.cs_client_key.empty() && !config_.control_token_file.empty();
    tls::LocalFiles f = tls::LocalFilesIn(config_.tls_dir);
    if (!all_given) {
      auto made = tls::EnsureLocalFiles(config_.tls_dir, clock_);
      if (!made.ok())
        return Error(made.error().code(), "TLS files in " + config_.tls_dir + ": " + made.error().message());
      f = *made;
    }
    auto pick = [](std::string& v, const std::string& d) {
      if (v.empty()) v = d;
    };
    pick(config_.tls_cert, f.server_cert);
    pick(config_.tls_key, f.server_key);
    pick(config_.tls_ca, f.ca);
    pick(config_.arm_trusted_certs, f.trusted_set);
    pick(config_.cs_client_cert, f.rp_client_cert);
    pick(config_.cs_client_key, f.rp_client_key);
    pick(config_.control_token_file, f.control_token);
    tls_files_ = f;
    return Status::Ok();
  }

  Result<std::shared_ptr<tls::ServerContext>> ServerTlsContext(bool mutual) {
    tls::ServerContextOptions o;
    o.cert_file = config_.tls_cert;
    o.key_file = config_.tls_key;
    if (mutual) {
      o.client_ca_file = config_.tls_ca;
    } else {
      o.request_client_certificate = true;
    }
    return tls::ServerContext::Load(o);
  }

  Status StartSimulator(bool with_data_dir_subfolder) {
    simulator::SimulatorOptions o;
    HCPRP_ASSIGN_OR_RETURN(auto ep, http::ParseListenAddress(config_.cs_listen));
    o.listen = ep;
    if (!config_.insecure_http) {
      HCPRP_ASSIGN_OR_RETURN(auto ctx, ServerTlsContext(true));
      o.tls.context = std::move(ctx);
      o.tls.authenticate = ResourceProviderOnly(config_.cs_client_name);
    }
    o.arm_metadata_file = config_.arm_metadata_file;
    if (config_.control_listen != "off") {
      HCPRP_ASSIGN_OR_RETURN(auto cep, http::ParseListenAddress(config_.control_listen));
      if (!IsLoopback(cep.host)) {
        return Error::InvalidArgument("--control-listen must be a loopback address, not " +
                                      config_.control_listen);
      }
      o.control_listen = cep;
      o.control_token = FirstLine(config_.control_token_file);
      if (o.control_token.size() < 16) {
        return Error::InvalidArgument("the control token in " + config_.control_token_file +
                                      " must have at least 16 characters");
      }
    }
    o.data_dir = with_data_dir_subfolder
                     ? (std::filesystem::path(config_.data_dir) / "clusters-service").string()
                     : config_.data_dir;
    HCPRP_RETURN_IF_ERROR(SecureDataDir(config_.data_dir));
    HCPRP_RETURN_IF_ERROR(SecureDataDir(o.data_dir));
    HCPRP_RETURN_IF_ERROR(simulator::ApplyProfileFlag(o, config_.profile));
    HCPRP_RETURN_IF_ERROR(simulator::ApplyTimeScaleFlag(o, config_.time_scale));
    o.versions_file = config_.versions_file;
    if (config_.provisioner == "engine") {
      provisioning::EnginePluginOptions eo;
      eo.orphan_threshold = std::chrono::duration_cast<Duration>(
          std::chrono::duration<double>(std::max(config_.orphan_threshold_seconds, 0.0)));
      o.provisioner_factory = provisioning::EngineFactory(eo);
    }
    sim_logger_.emplace(logger_.WithComponent("clusters-service"));
    o.logger = &*sim_logger_;
    HCPRP_ASSIGN_OR_RETURN(auto sim, simulator::Simulator::Start(o));
    parts_.sim = std::move(sim);
    return Status::Ok();
  }

  // The Cluster Service listener's trust: the local CA's chain (checked in the handshake) is not enough,
  // ARM's client certificate chains to it too; only the resource provider's certificate is let in, by
  // its DNS names, or its common name when it has none (tls::CertificateNamed).
  static http::Authenticator ResourceProviderOnly(std::string name) {
    return [name = std::move(name)](const tls::PeerCertificate* peer) -> std::optional<http::Refusal> {
      if (peer == nullptr) return http::Refusal{"no_certificate"};
      if (!tls::CertificateNamed(*peer, name)) return http::Refusal{"not_the_resource_provider"};
      return std::nullopt;
    };
  }

  Status OpenStore() {
    HCPRP_ASSIGN_OR_RETURN(auto url, DefaultStoreUrl(config_));
    if (url.rfind("sqlite://", 0) == 0) {
      HCPRP_RETURN_IF_ERROR(SecureDatabaseFiles(url.substr(std::string_view("sqlite://").size())));
    }
    store::OpenOptions o;
    o.clock = &lease_clock_;
    o.indexes = arm::StoreIndexes();
    o.purge_interval = std::chrono::seconds(60);
    o.change_retention =
        std::chrono::seconds(static_cast<int64_t>(std::max(config_.change_retention_hours, 0.0) * 3600));
    o.change_retention_changes = config_.change_retention_changes;
    auto s = store::OpenStore(url, o);
    if (!s.ok()) return Error(s.error().code(), "opening store " + url + ": " + s.error().message());
    parts_.store = std::move(s).value();
    parts_.metered =
        std::make_unique<store::MetricsStore>(parts_.store.get(), &registry_, store::EngineOfUrl(url));
    parts_.writes = std::make_unique<store::WriteHealthStore>(parts_.metered.get());
    store_url_ = url;
    return Status::Ok();
  }

  Status ConnectClusterService() {
    clusterservice::HttpClientOptions o;
    o.base_url = config_.cluster_service_url.empty() && parts_.sim ? parts_.sim->base_url()
                                                                   : config_.cluster_service_url;
    if (o.base_url.empty()) return Error::InvalidArgument("--clusters-service URL is required");
    if (o.base_url.rfind("https://", 0) == 0) {
      HCPRP_ASSIGN_OR_RETURN(auto ctx, tls::ClientContext::Load(
                                           {config_.tls_ca, config_.cs_client_cert, config_.cs_client_key}));
      o.http.tls = std::move(ctx);
    }
    HCPRP_ASSIGN_OR_RETURN(auto c, clusterservice::HttpClient::Create(o));
    parts_.cs = std::move(c);
    cs_url_ = o.base_url;
    return Status::Ok();
  }

  Status StartBackend() {
    parts_.notify_http = std::make_unique<http::Client>();
    parts_.notifier = std::make_unique<backend::HttpNotifier>(parts_.notify_http.get());
    backend::BackendOptions o;
    o.owner = config_.owner;
    o.lease_ttl = std::chrono::milliseconds(config_.lease_ttl_ms);
    o.shards = config_.shards;
    o.resync_interval = std::chrono::seconds(config_.resync_seconds);
    o.version_resync =
        std::chrono::milliseconds(static_cast<int64_t>(std::max(config_.version_resync_seconds, 0.1) * 1000));
    o.version_concurrency = static_cast<size_t>(std::max(config_.version_concurrency, 1));
    o.check_concurrency = config_.check_concurrency;
    o.event_concurrency = config_.event_concurrency;
    o.create_recovery_grace = std::chrono::seconds(config_.create_recovery_seconds);
    o.gc_window = std::chrono::seconds(config_.gc_window_seconds);
    o.operation_ttl_seconds = config_.operation_ttl_seconds;
    o.metrics = &registry_;
    HCPRP_ASSIGN_OR_RETURN(auto b,
                           backend::Backend::Create(o, parts_.writes.get(), parts_.cs.get(), &lease_clock_,
                                                    logger_.WithComponent("backend"), parts_.notifier.get()));
    parts_.backend = std::move(b);
    return parts_.backend->Start();
  }

  // The connection cap, lowered to leave the store, the Cluster Service client and the logs some
  // descriptors when the process may open fewer than the cap plus those.
  size_t ConnectionCap(size_t wanted) {
    constexpr rlim_t kReserved = 256;
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return wanted;
    size_t usable = limit.rlim_cur > kReserved ? static_cast<size_t>(limit.rlim_cur - kReserved) : 1;
    if (wanted <= usable) return wanted;
    logger_.Warn("connection cap lowered to the descriptor limit",
                 {{"max_connections", static_cast<int64_t>(wanted)}, {"cap", static_cast<int64_t>(usable)}});
    return usable;
  }

  Status StartFrontend() {
    frontend::FrontendOptions o;
    o.retry_after_seconds = config_.retry_after;
    o.location = config_.location;
    o.operation_ttl_seconds = config_.operation_ttl_seconds;
    o.write_probe = [writes = parts_.writes.get()] { return writes->CheckWritable(); };
    o.metrics = &registry_;
    o.scheme = config_.insecure_http ? "http" : "https";
    HCPRP_ASSIGN_OR_RETURN(auto f, frontend::Frontend::Create(o, parts_.writes.get(), parts_.cs.get(),
                                                              &clock_, logger_.WithComponent("frontend")));
    parts_.frontend = std::move(f);
    HCPRP_ASSIGN_OR_RETURN(auto ep, http::ParseListenAddress(config_.listen));
    http::ServerOptions so;
    so.listen = ep;
    so.threads = config_.threads;
    so.io_threads = 2;
    so.max_body_bytes = o.max_body_bytes;
    so.on_too_large =
        [max = o.max_body_bytes,
         refused = frontend::BodiesRefusedCounter(registry_, "too_large")](const http::Request& header_only) {
          refused->Inc();
          return frontend::TooLargeResponse(header_only, max);
        };
    so.max_connections = ConnectionCap(config_.max_connections);
    so.on_overloaded = frontend::OverloadedResponse;
    if (!config_.insecure_http) HCPRP_RETURN_IF_ERROR(ArmClientAuthentication(so.tls));
    auto* fe = parts_.frontend.get();
    auto s = http::Server::Start(so, [fe](http::Request&& r) { return fe->Handle(std::move(r)); });
    if (!s.ok())
      return Error(s.error().code(), "listening on " + config_.listen + ": " + s.error().message());
    parts_.server = std::move(s).value();
    return Status::Ok();
  }

  // TLS of the ARM listener: only callers presenting one of ARM's trusted certificates reach the
  // handlers; every refusal is logged and counted by reason.
  Status ArmClientAuthentication(http::ServerTls& t) {
    HCPRP_ASSIGN_OR_RETURN(auto ctx, ServerTlsContext(false));
    t.context = std::move(ctx);
    HCPRP_RETURN_IF_ERROR(FollowArmMetadata());
    HCPRP_ASSIGN_OR_RETURN(auto auth, tls::ArmAuthenticator::Load(config_.arm_trusted_certs, &clock_));
    parts_.arm_auth = std::move(auth);
    auto* a = parts_.arm_auth.get();
    t.authenticate = [a](const tls::PeerCertificate* peer) -> std::optional<http::Refusal> {
      if (auto refusal = a->Check(peer)) return http::Refusal{std::string(tls::RefusalName(*refusal))};
      return std::nullopt;
    };
    auto& refusals =
        registry_.AddCounter("hcprp_auth_refusals_total",
                             "Requests refused because the caller did not authenticate as ARM", {"reason"});
    t.on_refused = [this, &refusals](const http::Request& req, const http::Refusal& r,
                                     const http::Peer& peer) {
      const std::string& reason = r.reason;
      refusals.With({reason})->Inc();
      logger_.Warn("request refused: caller not authenticated as ARM",
                   {{"reason", reason},
                    {"peer", peer.address},
                    {"method", std::string(req.method_string())},
                    {"path", std::string(req.target().substr(0, req.target().find('?')))}});
      return frontend::UnauthenticatedResponse(reason);
    };
    return Status::Ok();
  }

  // With --arm-metadata-url: keeps --arm-trusted-certs a copy of ARM's metadata (see arm_metadata.h).
  Status FollowArmMetadata() {
    if (config_.arm_metadata_url.empty()) return Status::Ok();
    HCPRP_ASSIGN_OR_RETURN(auto url, http::ParseUrl(config_.arm_metadata_url));
    http::ClientOptions co;
    if (url.scheme == "https") {
      HCPRP_ASSIGN_OR_RETURN(co.tls, tls::ClientContext::Load({config_.arm_metadata_ca, "", ""}));
    } else if (!IsLoopback(url.endpoint.host)) {
      return Error::InvalidArgument("--arm-metadata-url must be https unless it names a loopback address");
    }
    parts_.metadata_http = std::make_unique<http::Client>(co);
    auto fetch = [client = parts_.metadata_http.get(), url]() -> Result<std::string> {
      http::Request req = http::MakeRequest(http::Verb::get, url.target);
      req.set(http::Field::accept, "application/json");
      HCPRP_ASSIGN_OR_RETURN(auto res, client->Send(url.endpoint, std::move(req), std::chrono::seconds(10)));
      if (res.result() != http::StatusCode::ok) {
        return Error::Unavailable("the metadata endpoint answered " + std::to_string(res.result_int()));
      }
      return std::move(res.body());
    };
    const auto interval = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(config_.arm_metadata_refresh_seconds));
    HCPRP_ASSIGN_OR_RETURN(parts_.arm_metadata,
                           tls::ArmMetadataFollower::Start(fetch, config_.arm_trusted_certs, interval,
                                                           logger_.WithComponent("arm-metadata")));
    return Status::Ok();
  }

  // The token of the admin API: from --admin-token-file, else a new one written to
  // data_dir/admin-token (mode 0600) for scripts.
  Result<std::string> AdminToken() {
    if (!config_.admin_token_file.empty()) {
      std::ifstream in(config_.admin_token_file);
      std::string token;
      if (!in || !std::getline(in, token)) {
        return Error::InvalidArgument("cannot read --admin-token-file " + config_.admin_token_file);
      }
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
      if (token.size() < 16)
        return Error::InvalidArgument("the admin token must have at least 16 characters");
      return token;
    }
    std::string token = admin::NewAdminToken();
    // Processes without a data directory of their own print the token and write no file (several
    // frontends and backends would overwrite each other's).
    if (!config_.admin_token_in_data_dir) return token;
    HCPRP_RETURN_IF_ERROR(SecureDataDir(config_.data_dir));
    auto path = std::filesystem::path(config_.data_dir) / "admin-token";
    HCPRP_RETURN_IF_ERROR(tls::WriteFileAtomically(path.string(), token + "\n", tls::FileSecrecy::kSecret));
    admin_token_path_ = std::filesystem::absolute(path).string();
    return token;
  }

  // The admin listener: metrics of whatever this process runs, the admin API over its store and
  // backend, and the console (operation metrics where a backend runs).
  Status StartAdmin() {
    if (config_.admin_listen == "off") return Status::Ok();
    if (parts_.sim) {
      auto* sim = parts_.sim.get();
      admin::RegisterSimulatorMetrics(registry_,
                                      [sim](http::Request&& r) { return sim->Handle(std::move(r)); });
    }
    if (parts_.server) {
      auto* server = parts_.server.get();
      registry_.AddCallback(
          "hcprp_frontend_open_connections", "Open connections of the ARM listener", metrics::Type::kGauge,
          {}, [server] {
            return std::vector<metrics::Sample>{{{}, static_cast<double>(server->connection_count())}};
          });
    }
    // The console (and the operation metrics) where a backend runs: frontends, often many, do not
    // each keep a copy of the store in memory.
    if (parts_.writes && parts_.backend) {
      admin::LiveViewOptions lo;
      lo.metrics = &registry_;
      lo.operation_metrics = parts_.backend != nullptr;
      lo.stuck_after = std::chrono::seconds(config_.stuck_after_seconds);
      auto live = admin::LiveView::Start(lo, parts_.writes.get(), &clock_, logger_.WithComponent("console"));
      if (live.ok()) {
        parts_.live = std::move(live).value();
      } else {
        // The service runs on without its console (for example the store was down at start-up).
        logger_.Warn("operations console not started", {{"error", live.error().ToString()}});
      }
    }
    HCPRP_ASSIGN_OR_RETURN(auto ep, http::ParseListenAddress(config_.admin_listen));
    http::ServerOptions so;
    HCPRP_RETURN_IF_ERROR(AdminTransport(ep, so));
    HCPRP_ASSIGN_OR_RETURN(auto token, AdminToken());
    admin_token_ = token;
    admin::AdminOptions ao;
    ao.metrics_need_token = so.tls.context != nullptr;
    ao.secure_cookie = so.tls.context != nullptr;
    ao.token = token;
    ao.metrics = &registry_;
    ao.store = parts_.writes.get();
    ao.backend = parts_.backend.get();
    ao.live = parts_.live.get();
    ao.console_dir = parts_.live ? config_.console_dir : "";
    parts_.admin = std::make_unique<admin::AdminApi>(ao, &clock_, logger_.WithComponent("admin"));
    so.listen = ep;
    so.threads = 2;
    so.max_connections = 256;
    so.max_body_bytes = 64 * 1024;
    auto* api = parts_.admin.get();
    so.screen = [api](const http::Request& header) { return api->Screen(header); };
    auto s = http::Server::Start(so, [api](http::Request&& r) { return api->Handle(std::move(r)); });
    if (!s.ok()) {
      return Error(s.error().code(),
                   "admin listener on " + config_.admin_listen + ": " + s.error().message());
    }
    parts_.admin_server = std::move(s).value();
    admin_tls_ = so.tls.context != nullptr;
    return Status::Ok();
  }

  // The admin listener's transport: plain HTTP on loopback, where only the machine's users reach it;
  // anywhere else HTTPS with the listeners' certificate (its token and metrics travel the network).
  Status AdminTransport(const http::Endpoint& ep, http::ServerOptions& so) {
    if (IsLoopback(ep.host)) return Status::Ok();
    if (config_.insecure_http) {
      return Error::InvalidArgument(
          "--admin-listen " + config_.admin_listen +
          " is not a loopback address: it is served over TLS, which --insecure-http "
          "turns off");
    }
    if (config_.tls_cert.empty()) HCPRP_RETURN_IF_ERROR(PrepareTls({}));
    tls::ServerContextOptions o;
    o.cert_file = config_.tls_cert;
    o.key_file = config_.tls_key;
    HCPRP_ASSIGN_OR_RETURN(so.tls.context, tls::ServerContext::Load(o));
    return Status::Ok();
  }

  // Lines naming the admin listener, for the start-up banner.
  std::string AdminBanner() const {
    if (!parts_.admin_server) return "";
    std::string base = (admin_tls_ ? "https://" : "http://") + parts_.admin_server->endpoint().ToString();
    std::string out = "  metrics:           " + base + "/metrics\n";
    out += "  admin API:         " + base + "/admin/ (Authorization: Bearer <token>";
    out += admin_token_path_.empty() ? ")\n" : ", token in " + admin_token_path_ + ")\n";
    if (admin_token_path_.empty() && config_.admin_token_file.empty()) {
      out += "  admin token:       " + admin_token_ + "\n";
    }
    if (parts_.live) out += "  console:           " + base + "/console/?token=" + admin_token_ + "\n";
    return out;
  }

  void Shutdown() {
    if (parts_.live) parts_.live->Stop();
    if (parts_.admin_server) parts_.admin_server->Stop(std::chrono::seconds(2));
    if (parts_.server) parts_.server->Stop(std::chrono::seconds(10));
    if (parts_.backend) parts_.backend->Stop();
    if (parts_.sim) parts_.sim->Stop();
  }

  std::string Scheme() const { return config_.insecure_http ? "http://" : "https://"; }

  // How to call the ARM endpoint with the generated files.
  std::string TlsBanner() const {
    if (config_.insecure_http) return "  TLS:               off (--insecure-http)\n";
    std::string out = "  CA certificate:    " + config_.tls_ca + "\n";
    out += "  ARM client cert:   " + tls_files_.client_cert + " (key " + tls_files_.client_key + ")\n";
    out += "  trusted ARM certs: " + config_.arm_trusted_certs + "\n";
    out += "  curl:              curl --cacert " + config_.tls_ca + " --cert " + tls_files_.client_cert +
           " --key " + tls_files_.client_key + " " + Scheme() + parts_.server->endpoint().ToString() +
           "/healthz\n";
    return out;
  }

  std::string ControlBanner() const {
    if (!parts_.sim || parts_.sim->control_url().empty()) return "";
    return "  simulator control: " + parts_.sim->control_url() +
           "/control (Authorization: Bearer <token>, token in " + config_.control_token_file + ")\n";
  }

  // The backend's name kept in data_dir/backend-name: a restarted `serve` takes its shard leases and
  // its place in the event stream back at once (a random name when the file cannot be written).
  std::string KeptBackendName() {
    auto path = std::filesystem::path(config_.data_dir) / "backend-name";
    if (std::string kept = FirstLine(path.string()); !kept.empty()) return kept;
    std::string name = "serve-" + NewUuidV4();
    std::ofstream(path, std::ios::trunc) << name << "\n";
    return name;
  }

  int Serve() {
    auto signals = BlockStopSignals();
    if (auto s = PrepareTls({config_.listen, config_.cs_listen}); !s.ok()) return Fail("TLS", s.error());
    if (auto s = StartSimulatorIfNeeded(); !s.ok())
      return Fail("starting the Cluster Service simulator", s.error());
    if (auto s = OpenStore(); !s.ok()) return Fail("store", s.error());
    if (auto s = ConnectClusterService(); !s.ok()) return Fail("Cluster Service", s.error());
    if (config_.owner.empty()) config_.owner = KeptBackendName();
    if (auto s = StartBackend(); !s.ok()) return Fail("backend", s.error());
    if (auto s = StartFrontend(); !s.ok()) return Fail("frontend", s.error());
    if (auto s = StartAdmin(); !s.ok()) return Fail("admin", s.error());
    std::cout << "hcprp serve is running\n"
              << "  ARM endpoint:      " << Scheme() << parts_.server->endpoint().ToString() << "\n"
              << "  store:             " << store_url_ << "\n"
              << "  Cluster Service:   " << cs_url_
              << (parts_.sim ? " (simulator, profile " + config_.profile + ", time scale " +
                                   config_.time_scale + ", provisioner " + config_.provisioner + ")"
                             : std::string())
              << "\n"
              << ControlBanner() << TlsBanner() << AdminBanner() << "  try:               hcpctl --endpoint "
              << Scheme() << parts_.server->endpoint().ToString()
              << (config_.insecure_http ? std::string() : " --data-dir " + config_.data_dir)
              << " subscription register\n"
              << "Stop with Ctrl-C (SIGINT) or SIGTERM." << std::endl;
    int sig = WaitForSignal(signals);
    logger_.Info("stopping", {{"signal", sig}});
    Shutdown();
    return 0;
  }

  int FrontendOnly() {
    auto signals = BlockStopSignals();
    if (auto s = PrepareTls({config_.listen}); !s.ok()) return Fail("TLS", s.error());
    if (auto s = OpenStore(); !s.ok()) return Fail("store", s.error());
    if (auto s = ConnectClusterService(); !s.ok()) return Fail("Cluster Service", s.error());
    if (auto s = StartFrontend(); !s.ok()) return Fail("frontend", s.error());
    if (auto s = StartAdmin(); !s.ok()) return Fail("admin", s.error());
    std::cout << "hcprp frontend listening on " << Scheme() << parts_.server->endpoint().ToString() << "\n"
              << TlsBanner() << AdminBanner() << std::flush;
    WaitForSignal(signals);
    Shutdown();
    return 0;
  }

  int BackendOnly() {
    auto signals = BlockStopSignals();
    if (config_.cluster_service_url.rfind("https://", 0) == 0) {
      if (auto s = PrepareTls({}); !s.ok()) return Fail("TLS", s.error());
    }
    if (auto s = OpenStore(); !s.ok()) return Fail("store", s.error());
    if (auto s = ConnectClusterService(); !s.ok()) return Fail("Cluster Service", s.error());
    if (auto s = StartBackend(); !s.ok()) return Fail("backend", s.error());
    if (auto s = StartAdmin(); !s.ok()) return Fail("admin", s.error());
    std::cout << "hcprp backend running on " << store_url_ << "\n" << AdminBanner() << std::flush;
    WaitForSignal(signals);
    Shutdown();
    return 0;
  }

  int ClustersService() {
    auto signals = BlockStopSignals();
    config_.cs_listen = config_.listen;
    if (auto s = PrepareTls({config_.listen}); !s.ok()) return Fail("TLS", s.error());
    if (auto s = StartSimulator(false); !s.ok())
      return Fail("starting the Cluster Service simulator", s.error());
    if (auto s = StartAdmin(); !s.ok()) return Fail("admin", s.error());
    std::cout << "hcprp clusters-service listening on " << parts_.sim->base_url() << "\n"
              << ControlBanner() << AdminBanner() << std::flush;
    WaitForSignal(signals);
    Shutdown();
    return 0;
  }

  int Check() {
    if (config_.cluster_service_url.rfind("https://", 0) == 0) {
      if (auto s = PrepareTls({}); !s.ok()) return Fail("TLS", s.error());
    }
    if (auto s = OpenStore(); !s.ok()) return Fail("store", s.error());
    clusterservice::Client* cs = nullptr;
    if (!config_.cluster_service_url.empty()) {
      if (auto s = ConnectClusterService(); !s.ok()) return Fail("Cluster Service", s.error());
      cs = parts_.cs.get();
    }
    check::CheckOptions o;
    o.gc_window = std::chrono::seconds(config_.gc_window_seconds);
    o.check_cluster_service = cs != nullptr;
    o.stuck_after = std::chrono::seconds(config_.stuck_after_seconds);
    auto r = check::RunCheck(*parts_.store, cs, clock_, o);
    if (!r.ok()) return Fail("check", r.error());
    // A pass reads partitions page by page, not as one snapshot, so work in flight can look like a
    // violation for a moment. A violation counts only when a second pass a little later still finds it.
    for (int pass = 0; pass < 2 && !r->ok(); ++pass) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      auto again = check::RunCheck(*parts_.store, cs, clock_, o);
      if (!again.ok()) return Fail("check", again.error());
      std::vector<check::Violation> kept;
      for (const auto& v : again->violations) {
        for (const auto& before : r->violations) {
          if (before.invariant == v.invariant && before.subject == v.subject) {
            kept.push_back(v);
            break;
          }
        }
      }
      again->violations = std::move(kept);
      r = std::move(again);
    }
    if (config_.json_output) {
      std::cout << json::serialize(check::ReportToJson(*r)) << "\n";
    } else {
      std::cout << "checked " << r->partitions << " partitions, " << r->resources << " resources, "
                << r->operations << " operations, " << r->service_objects << " Cluster Service objects\n";
      for (const auto& v : r->violations) {
        std::cout << "invariant " << v.invariant << ": " << v.subject << ": " << v.message << "\n";
      }
      std::cout << (r->ok() ? "all invariants hold\n" : "INVARIANTS VIOLATED\n");
    }
    return r->ok() ? 0 : 1;
  }

 private:
  Status StartSimulatorIfNeeded() {
    if (!config_.cluster_service_url.empty()) return Status::Ok();
    return StartSimulator(true);
  }

  Config config_;
  SystemClock clock_;
  // The store's and the backend's: leases, fences and deadlines ignore steps of the machine's clock.
  SteadyWallClock lease_clock_;
  Logger logger_;
  std::optional<Logger> sim_logger_;
  metrics::Registry registry_;  // outlives every part that records into it
  Parts parts_;
  std::string admin_token_;
  std::string admin_token_path_;
  bool admin_tls_ = false;
  std::string store_url_;
  std::string cs_url_;
  tls::LocalFiles tls_files_;
};

}  // namespace

int Main(int argc, char** argv) {
  // Everything hcprp creates (databases, their journals, tokens, keys, folders) is its owner's alone.
  ::umask(077);
  Config c;
  Command command = Command::kServe;
  if (auto exit_code = ParseCommandLine(argc, argv, c, command)) return *exit_code;
  Runner runner(c);
  switch (command) {
    case Command::kServe:
      return runner.Serve();
    case Command::kFrontend:
      return runner.FrontendOnly();
    case Command::kBackend:
      return runner.BackendOnly();
    case Command::kClustersService:
      return runner.ClustersService();
    case Command::kCheck:
      return runner.Check();
  }
  return 2;
}

}  // namespace hcprp::app

int main(int argc, char** argv) { return hcprp::app::Main(argc, argv); }
