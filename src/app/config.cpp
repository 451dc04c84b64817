#include "app/config.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <utility>

namespace hcprp::app {

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "::1" || host == "[::1]" || host == "localhost" ||
         host.rfind("127.", 0) == 0;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

Result<std::string> DefaultStoreUrl(const Config& c) {
  if (!c.store_url.empty()) return c.store_url;
  std::error_code ec;
  std::filesystem::create_directories(c.data_dir, ec);
  if (ec) return Error::IoError("cannot create data directory " + c.data_dir + ": " + ec.message());
  return "sqlite://" + std::filesystem::absolute(std::filesystem::path(c.data_dir) / "hcprp.db").string();
}

namespace {

// The flag groups several programs share, each adding its flags in the order --help lists them.

void AddCommonFlags(CLI::App* s, Config& c) {
  s->add_option("--log-level", c.log_level, "debug, info, warn or error")->capture_default_str();
}

void AddAdminFlags(CLI::App* s, Config& c) {
  s->add_option("--admin-listen", c.admin_listen,
                "Admin listener HOST:PORT (metrics, admin API, console); off: none")
      ->capture_default_str();
  s->add_option(
      "--admin-token-file", c.admin_token_file,
      "File whose first line is the admin API token (default: a new token in DATA_DIR/admin-token)");
  s->add_option("--console-dir", c.console_dir, "Static files of the operations console")
      ->capture_default_str();
}

// `listens`: the program has a listener of its own; `calls_cs`: it is a client of the Cluster Service.
void AddTlsFlags(CLI::App* s, Config& c, bool listens, bool calls_cs) {
  s->add_option("--tls-dir", c.tls_dir,
                "Folder of the TLS files, created with a local CA on first start (default: DATA_DIR/tls)");
  s->add_option("--tls-ca", c.tls_ca,
                "CA certificate (PEM) the Cluster Service and its clients are verified against");
  if (listens) {
    s->add_option("--tls-cert", c.tls_cert, "Listener certificate (PEM, reloaded when it changes)");
    s->add_option("--tls-key", c.tls_key, "Listener private key (PEM)");
    s->add_flag("--insecure-http", c.insecure_http,
                "Plain HTTP without authentication; loopback addresses only");
  }
  if (calls_cs) {
    s->add_option("--clusters-service-cert", c.cs_client_cert,
                  "Client certificate (PEM) presented to the Cluster Service");
    s->add_option("--clusters-service-key", c.cs_client_key, "Its private key (PEM)");
  }
}

void AddArmFlags(CLI::App* s, Config& c) {
  s->add_option("--arm-trusted-certs", c.arm_trusted_certs,
                "ARM's client certificates in the shape of ARM's metadata (JSON; reloaded when it changes; "
                "default: TLS_DIR/arm-client-certificates.json)");
}

void AddControlFlags(CLI::App* s, Config& c) {
  s->add_option(
       "--control-listen", c.control_listen,
       "Loopback HOST:PORT of the simulator's /control API (bearer token); off: /control stays on the "
       "Cluster Service listener")
      ->capture_default_str();
  s->add_option("--control-token-file", c.control_token_file,
                "File whose first line is the /control bearer token (default: TLS_DIR/control-token)");
}

void AddStoreFlags(CLI::App* s, Config& c, bool required) {
  auto* o = s->add_option("--store", c.store_url,
                          "Store URL: sqlite:///abs/file.db or postgresql://user@host:port/db");
  if (required) o->required();
  s->add_option(
       "--change-retention-hours", c.change_retention_hours,
       "Hours the store's change feed keeps a change (0: for ever); a reader away longer resynchronises")
      ->capture_default_str();
  s->add_option("--change-retention-changes", c.change_retention_changes,
                "At most about this many changes kept in the store's change feed, oldest removed first "
                "(0: no bound); a reader behind them resynchronises")
      ->capture_default_str();
}

void AddFrontendFlags(CLI::App* s, Config& c) {
  s->add_option("--listen", c.listen, "Frontend HOST:PORT")->capture_default_str();
  s->add_option("--location", c.location,
                "The Azure region this deployment serves: the location of every resource it creates")
      ->capture_default_str();
  s->add_option("--retry-after", c.retry_after, "Retry-After seconds on accepted operations")
      ->capture_default_str();
  s->add_option("--threads", c.threads,
                "Request handler threads (as many record a create's Cluster Service object after its 201)")
      ->capture_default_str();
  s->add_option("--max-connections", c.max_connections,
                "Open connections at most; more are answered 503 and closed")
      ->capture_default_str();
  s->add_option("--operation-ttl", c.operation_ttl_seconds, "Seconds operation status stays readable")
      ->capture_default_str();
}

void AddBackendFlags(CLI::App* s, Config& c) {
  s->add_option("--owner", c.owner,
                "Backend name in the leases (default: random; serve keeps one in the data directory)");
  s->add_option("--lease-ttl-ms", c.lease_ttl_ms,
                "Shard lease TTL: a dead backend's subscriptions move to the others within it")
      ->capture_default_str();
  s->add_option("--shards", c.shards, "Subscription shards split among backends (same on every backend)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  s->add_option("--resync-seconds", c.resync_seconds, "Safety-net resync interval")->capture_default_str();
  s->add_option("--version-resync-seconds", c.version_resync_seconds,
                "Safety-net interval of the version controller's pass (releases announced on the Cluster "
                "Service's event stream start one at once)")
      ->capture_default_str();
  s->add_option("--version-concurrency", c.version_concurrency,
                "Cluster Service requests that raise desired versions at once in a version pass")
      ->capture_default_str();
  s->add_option("--check-concurrency", c.check_concurrency,
                "Operations a backend checks against the Cluster Service at once")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{64}));
  s->add_option("--event-concurrency", c.event_concurrency,
                "Clusters whose Cluster Service events a backend applies at once (their transitions share "
                "the store's commits)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{64}));
  s->add_option("--create-recovery-seconds", c.create_recovery_seconds,
                "Age after which a create for which no Cluster Service object was found is POSTed again "
                "by the backend (with the same idempotency key)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  s->add_option("--gc-window-seconds", c.gc_window_seconds,
                "Age before an orphaned Cluster Service object is deleted")
      ->capture_default_str();
}

void AddSimulatorFlags(CLI::App* s, Config& c) {
  s->add_option("--profile", c.profile, "Simulator timing: instant, demo or realistic")
      ->capture_default_str();
  s->add_option("--time-scale", c.time_scale, "Multiplies every simulated duration")->capture_default_str();
  s->add_option(
       "--versions", c.versions_file,
       "The simulator's OpenShift version catalogue (JSON in the form of src/simulator/versions.json; "
       "default: that file, compiled in)")
      ->check(CLI::ExistingFile);
  s->add_option(
       "--provisioner", c.provisioner,
       "engine (provisioning engine + simulated Azure) or timed (state machine with profile durations)")
      ->check(CLI::IsMember({"timed", "engine"}))
      ->capture_default_str();
  s->add_option("--orphan-threshold-seconds", c.orphan_threshold_seconds,
                "Engine only: how long a deletion may fail on invalid credentials before its resources are "
                "orphaned (scaled by --time-scale)")
      ->capture_default_str();
}

constexpr const char* kStuckAfterHelp =
    "Seconds without a status change after which an operation counts as stuck in the metrics";

// The programs, one function each.

CLI::App* AddServeCommand(CLI::App& app, Config& c) {
  auto* serve = app.add_subcommand("serve", "Frontend, backend and Cluster Service simulator in one process");
  AddCommonFlags(serve, c);
  serve->add_option("--data-dir", c.data_dir, "Where the store and simulator keep their data")
      ->capture_default_str();
  AddStoreFlags(serve, c, false);
  serve->add_option("--clusters-service", c.cluster_service_url,
                    "Use this Cluster Service instead of the simulator");
  serve->add_option("--clusters-service-listen", c.cs_listen, "Simulator HOST:PORT")->capture_default_str();
  AddFrontendFlags(serve, c);
  AddBackendFlags(serve, c);
  AddSimulatorFlags(serve, c);
  AddAdminFlags(serve, c);
  AddTlsFlags(serve, c, true, true);
  AddArmFlags(serve, c);
  AddControlFlags(serve, c);
  serve->add_option("--stuck-after", c.stuck_after_seconds, kStuckAfterHelp)->capture_default_str();
  return serve;
}

CLI::App* AddFrontendCommand(CLI::App& app, Config& c) {
  auto* fe = app.add_subcommand("frontend", "The ARM frontend alone");
  AddCommonFlags(fe, c);
  AddStoreFlags(fe, c, true);
  fe->add_option("--clusters-service", c.cluster_service_url, "Cluster Service base URL")->required();
  AddFrontendFlags(fe, c);
  AddAdminFlags(fe, c);
  AddTlsFlags(fe, c, true, true);
  AddArmFlags(fe, c);
  fe->add_option("--data-dir", c.data_dir, "Where the generated admin token is written")
      ->capture_default_str();
  return fe;
}

CLI::App* AddBackendCommand(CLI::App& app, Config& c) {
  auto* be = app.add_subcommand("backend", "The backend alone");
  AddCommonFlags(be, c);
  AddStoreFlags(be, c, true);
  be->add_option("--clusters-service", c.cluster_service_url, "Cluster Service base URL")->required();
  AddBackendFlags(be, c);
  AddAdminFlags(be, c);
  AddTlsFlags(be, c, false, true);
  be->add_option("--data-dir", c.data_dir, "Where the generated admin token is written")
      ->capture_default_str();
  be->add_option("--stuck-after", c.stuck_after_seconds, kStuckAfterHelp)->capture_default_str();
  return be;
}

CLI::App* AddClustersServiceCommand(CLI::App& app, Config& c) {
  auto* cs = app.add_subcommand("clusters-service", "The Cluster Service simulator alone");
  AddCommonFlags(cs, c);
  cs->add_option("--listen", c.listen, "HOST:PORT")->required();
  cs->add_option("--data-dir", c.data_dir, "Where the simulator keeps its objects")->capture_default_str();
  AddSimulatorFlags(cs, c);
  AddAdminFlags(cs, c);
  AddTlsFlags(cs, c, true, false);
  AddControlFlags(cs, c);
  return cs;
}

CLI::App* AddCheckCommand(CLI::App& app, Config& c) {
  auto* chk = app.add_subcommand("check", "Verify the invariants against a store and a Cluster Service");
  AddCommonFlags(chk, c);
  AddStoreFlags(chk, c, true);
  chk->add_option("--clusters-service", c.cluster_service_url, "Cluster Service base URL (omit: store only)");
  chk->add_option("--gc-window-seconds", c.gc_window_seconds, "Younger orphans are not violations")
      ->capture_default_str();
  chk->add_option(
         "--stuck-after", c.stuck_after_seconds,
         "Seconds without a change of an operation's status or conditions after which it is stuck (0: off)")
      ->capture_default_str();
  chk->add_flag("--json", c.json_output, "JSON report");
  chk->add_option("--data-dir", c.data_dir, "Where the TLS files are (DATA_DIR/tls)")->capture_default_str();
  AddTlsFlags(chk, c, false, true);
  return chk;
}

}  // namespace

std::optional<int> ParseCommandLine(int argc, char** argv, Config& c, Command& command) {
  CLI::App app{"hcprp: an Azure Resource Manager resource provider for hosted OpenShift control planes"};
  app.require_subcommand(1);
  const std::pair<CLI::App*, Command> programs[] = {
      {AddServeCommand(app, c), Command::kServe},
      {AddFrontendCommand(app, c), Command::kFrontend},
      {AddBackendCommand(app, c), Command::kBackend},
      {AddClustersServiceCommand(app, c), Command::kClustersService},
      {AddCheckCommand(app, c), Command::kCheck},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const auto& [program, program_command] : programs) {
    if (!*program) continue;
    // The frontend and the backend alone have a data directory of their own only when given --data-dir.
    if ((program_command == Command::kFrontend || program_command == Command::kBackend) &&
        program->get_option("--data-dir")->count() == 0) {
      c.admin_token_in_data_dir = false;
    }
    command = program_command;
    return std::nullopt;
  }
  return 2;
}

}  // namespace hcprp::app
