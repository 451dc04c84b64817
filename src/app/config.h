// The configuration of an hcprp process: every flag's value (Config) and the command line that sets
// them (ParseCommandLine). Read by the composition root (hcprp_main.cpp) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace hcprp::app {

struct Config {
  std::string data_dir = "./var";
  std::string listen = "127.0.0.1:8443";
  std::string store_url;            // default: sqlite in data_dir
  std::string cluster_service_url;  // default (serve): the in-process simulator
  std::string cs_listen = "127.0.0.1:0";
  std::string profile = "demo";
  std::string time_scale = "1";
  std::string versions_file;           // the simulator's version catalogue; default: the built-in one
  std::string provisioner = "engine";  // engine or timed
  double orphan_threshold_seconds = 600;
  std::string log_level = "info";
  int retry_after = 10;
  std::string location = "eastus";
  int threads = 8;
  size_t max_connections = 10'000;
  std::string owner;
  int lease_ttl_ms = 3000;
  double change_retention_hours = 168;
  uint64_t change_retention_changes = 1000000;
  uint32_t shards = 8;
  int resync_seconds = 45;
  double version_resync_seconds = 300;
  int version_concurrency = 4;
  size_t check_concurrency = 4;
  size_t event_concurrency = 32;
  int create_recovery_seconds = 10;
  int gc_window_seconds = 3600;
  int stuck_after_seconds = 600;
  int64_t operation_ttl_seconds = 604800;
  bool json_output = false;
  std::string admin_listen = "127.0.0.1:0";  // "off": no admin listener
  std::string admin_token_file;              // default: a new token written to data_dir/admin-token
  std::string console_dir = HCPRP_CONSOLE_DIR;
  bool admin_token_in_data_dir = true;  // false for frontend and backend without --data-dir
  // TLS. Files default to those under tls_dir (data_dir/tls), created on first start.
  std::string tls_dir;
  std::string tls_cert, tls_key;               // the listeners' certificate
  std::string tls_ca;                          // trust anchor for the Cluster Service and its clients
  std::string arm_trusted_certs;               // the frontend's trusted ARM certificates (ARM metadata shape)
  std::string cs_client_cert, cs_client_key;   // the RP's certificate towards the Cluster Service
  bool insecure_http = false;                  // plain HTTP, loopback only
  std::string control_listen = "127.0.0.1:0";  // the simulator's /control listener
  std::string control_token_file;              // default: tls_dir/control-token
  // The subject common name of the only client the Cluster Service listener accepts: the resource
  // provider's certificate (rp-client.pem of the local CA).
  std::string cs_client_name = "hcprp resource provider";
  // ARM's client-certificate metadata: followed when set, its last good copy kept in arm_trusted_certs.
  std::string arm_metadata_url;
  std::string arm_metadata_ca;  // trust anchors of its TLS certificate; default: the system's
  double arm_metadata_refresh_seconds = 3600;
  std::string arm_metadata_file;  // the simulator's stand-in for that endpoint serves this document
};

// The program an hcprp process runs.
enum class Command { kServe, kFrontend, kBackend, kClustersService, kCheck };

// Parses the command line into `c` and `command`. Returns the process's exit code when it must end
// now (--help, a bad flag: CLI11 has printed why), nullopt to run `command`.
std::optional<int> ParseCommandLine(int argc, char** argv, Config& c, Command& command);

// True for an IP literal of a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, brackets
// allowed) and for the name "localhost" (RFC 6761 reserves it for loopback). Any other name is not
// loopback: what it resolves to is not known when the flag is read.
bool IsLoopback(std::string_view host);
// The first line of a file without trailing white space ("" when it cannot be read).
std::string FirstLine(const std::string& path);
// --store, or a SQLite database in --data-dir (created, see SecureDataDir).
Result<std::string> DefaultStoreUrl(const Config& c);
// Creates `dir` if needed and makes it and what hcprp keeps in it the owner's only, removing every other
// permission bit: the folder (and its clusters-service folder) at most 0700; the databases (hcprp.db,
// simulator.db with their -wal, -shm and -journal files) and admin-token at most 0600. Tightens what an
// older version created wider; what is already that tight is not touched.
Status SecureDataDir(const std::string& dir);
// Makes a SQLite database and its -wal, -shm and -journal files (those that exist) at most 0600.
Status SecureDatabaseFiles(const std::string& db_path);

}  // namespace hcprp::app
