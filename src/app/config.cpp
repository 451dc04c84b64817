#include "app/config.h"

#include <CLI/CLI.hpp>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/json.h"

namespace hcprp::app {

bool IsLoopback(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (EqualsIgnoreCase(host, "localhost") || EqualsIgnoreCase(host, "localhost.")) return true;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  }
  return address.is_loopback();
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
  HCPRP_RETURN_IF_ERROR(SecureDataDir(c.data_dir));
  return "sqlite://" + std::filesystem::absolute(std::filesystem::path(c.data_dir) / "hcprp.db").string();
}

namespace {

namespace fs = std::filesystem;

// Removes from `p` every permission bit outside `allowed` (never adds one). Nothing is changed, and so
// nothing can fail, when `p` is missing, a symbolic link (its target is not ours to change) or already
// within `allowed` (a store on a read-only file system then reports its own error when opened).
Status Restrict(const fs::path& p, fs::perms allowed) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (ec || !fs::exists(st) || fs::is_symlink(st)) return Status::Ok();
  const fs::perms extra = st.permissions() & ~allowed;
  if (extra == fs::perms::none) return Status::Ok();
  fs::permissions(p, extra, fs::perm_options::remove, ec);
  if (ec) return Error::IoError("cannot restrict the mode of " + p.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Status SecureDatabaseFiles(const std::string& db_path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    HCPRP_RETURN_IF_ERROR(Restrict(db_path + suffix, fs::perms::owner_read | fs::perms::owner_write));
  }
  return Status::Ok();
}

Status SecureDataDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::IoError("cannot create data directory " + dir + ": " + ec.message());
  const fs::path root(dir);
  for (const fs::path& folder : {root, root / "clusters-service"}) {
    HCPRP_RETURN_IF_ERROR(Restrict(folder, fs::perms::owner_all));
    HCPRP_RETURN_IF_ERROR(SecureDatabaseFiles((folder / "hcprp.db").string()));
    HCPRP_RETURN_IF_ERROR(SecureDatabaseFiles((folder / "simulator.db").string()));
  }
  return Restrict(root / "admin-token", fs::perms::owner_read | fs::perms::owner_write);
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
  s->add_option(
      "--arm-trusted-certs", c.arm_trusted_certs,
      "ARM's client certificates in the shape of ARM's metadata (JSON; reloaded when it changes; "
      "default: TLS_DIR/arm-client-certificates.json); with --arm-metadata-url, its last good copy");
  s->add_option("--arm-metadata-url", c.arm_metadata_url,
                "ARM's client-certificate metadata endpoint, followed as ARM rotates its certificates "
                "(https, or http on loopback only)");
  s->add_option("--arm-metadata-ca", c.arm_metadata_ca,
                "CA certificates (PEM) the metadata endpoint is verified against (default: the system's)");
  s->add_option("--arm-metadata-refresh-seconds", c.arm_metadata_refresh_seconds,
                "How often the metadata is fetched again")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
}

void AddClusterServiceIdentityFlags(CLI::App* s, Config& c) {
  s->add_option(
       "--clusters-service-client-name", c.cs_client_name,
       "Name of the only client certificate the Cluster Service listener accepts (the resource "
       "provider's): one of its subjectAltName DNS entries, or its subject common name when it has none")
      ->capture_default_str();
  s->add_option("--arm-metadata-file", c.arm_metadata_file,
                "Serve this document (ARM's client-certificate metadata) at /metadata/authentication on the "
                "control listener: a stand-in for ARM's endpoint");
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
  AddClusterServiceIdentityFlags(serve, c);
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
  AddClusterServiceIdentityFlags(cs, c);
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
