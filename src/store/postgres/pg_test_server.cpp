#include "store/postgres/pg_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "store/postgres/pg_connection.h"

extern char** environ;

namespace hcprp::store::postgres {
namespace {

namespace fs = std::filesystem;

constexpr const char* kServerUser = "postgres";

Result<std::string> FindBinaries() {
  auto has_tools = [](const fs::path& d) { return fs::exists(d / "initdb") && fs::exists(d / "pg_ctl"); };
  if (const char* env = getenv("HCPRP_PG_BIN"); env != nullptr && *env != '\0') {
    if (has_tools(env)) return std::string(env);
    return Error::Unavailable(std::string("HCPRP_PG_BIN=") + env + " has no initdb/pg_ctl");
  }
  std::error_code ec;
  fs::path best;
  int best_version = -1;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    int v = std::atoi(e.path().filename().c_str());
    if (v > best_version && has_tools(e.path() / "bin")) {
      best_version = v;
      best = e.path() / "bin";
    }
  }
  if (best_version >= 0) return best.string();
  if (const char* path = getenv("PATH"); path != nullptr) {
    std::stringstream ss(path);
    std::string d;
    while (std::getline(ss, d, ':')) {
      if (!d.empty() && has_tools(d)) return d;
    }
  }
  return Error::Unavailable(
      "PostgreSQL server binaries (initdb, pg_ctl) not found in $HCPRP_PG_BIN, /usr/lib/postgresql/*/bin or "
      "PATH; "
      "install the server (Debian: apt-get install postgresql, see scripts/install-deps.sh)");
}

Result<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Error::IoError("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return Error::IoError("cannot find a free port");
  }
  close(fd);
  return static_cast<int>(ntohs(a.sin_port));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status PgTestServer::RunTool(const std::string& tool, std::vector<std::string> args,
                             int timeout_seconds) const {
  std::vector<std::string> argv;
  if (geteuid() == 0) argv = {"runuser", "-u", kServerUser, "--"};
  argv.push_back(bin_ + "/" + tool);
  for (auto& a : args) argv.push_back(std::move(a));
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  std::string log = dir_ + "/" + tool + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Error::Unavailable("cannot run " + argv[0] + ": " + std::strerror(rc));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Error::Timeout(tool + " did not finish within " + std::to_string(timeout_seconds) +
                            " s: " + ReadFile(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error::Unavailable(tool + " failed (status " + std::to_string(status) + "): " + ReadFile(log));
  }
  return Status::Ok();
}

Result<std::unique_ptr<PgTestServer>> PgTestServer::Start(std::string database) {
  HCPRP_ASSIGN_OR_RETURN(auto bin, FindBinaries());
  std::unique_ptr<PgTestServer> s(new PgTestServer());
  s->bin_ = bin;
  s->database_ = std::move(database);
  std::string tmpl = (fs::temp_directory_path() / "hcprp-pg-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return Error::IoError("mkdtemp failed");
  s->dir_ = tmpl;
  if (geteuid() == 0) {
    passwd* pw = getpwnam(kServerUser);
    if (pw == nullptr) return Error::Unavailable("no \"postgres\" user to run the test server as");
    if (chown(s->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      return Error::IoError("chown of " + s->dir_ + " failed");
  }
  chmod(s->dir_.c_str(), 0700);
  HCPRP_RETURN_IF_ERROR(s->RunTool(
      "initdb",
      {"-D", s->dir_ + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
      120));
  HCPRP_ASSIGN_OR_RETURN(auto port, FreePort());
  s->port_ = port;
  HCPRP_RETURN_IF_ERROR(s->StartServer());
  HCPRP_ASSIGN_OR_RETURN(auto admin, PgConnection::Connect(s->UrlOf("postgres"), "", 10));
  HCPRP_RETURN_IF_ERROR(admin->ExecSql("CREATE DATABASE " + s->database_, "create test database"));
  return s;
}

Status PgTestServer::StartServer() {
  std::string opts = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) +
                     " -c unix_socket_directories=" + dir_ + " -c fsync=on -c max_connections=400";
  // A port taken meanwhile by someone else: pick another one.
  for (int attempt = 0; attempt < 3; ++attempt) {
    Status st = RunTool(
        "pg_ctl", {"start", "-w", "-t", "60", "-D", dir_ + "/data", "-l", dir_ + "/server.log", "-o", opts},
        90);
    if (st.ok()) {
      running_ = true;
      return st;
    }
    if (Log().find("could not bind") == std::string::npos) return st;
    HCPRP_ASSIGN_OR_RETURN(auto port, FreePort());
    port_ = port;
    opts = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port_) +
           " -c unix_socket_directories=" + dir_ + " -c fsync=on -c max_connections=400";
  }
  return Error::Unavailable("could not start the test server: " + Log());
}

PgTestServer* PgTestServer::Shared(std::string* error) {
  static std::mutex mu;
  static std::unique_ptr<PgTestServer> server;
  static std::string failure;
  std::lock_guard lk(mu);
  if (!server && failure.empty()) {
    auto s = Start();
    if (s.ok()) {
      server = std::move(*s);
    } else {
      failure = s.error().ToString();
    }
  }
  if (!server && error != nullptr) *error = failure;
  return server.get();
}

PgTestServer::~PgTestServer() {
  if (running_)
    (void)RunTool("pg_ctl", {"stop", "-w", "-t", "60", "-m", "immediate", "-D", dir_ + "/data"}, 90);
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string PgTestServer::Url() const { return UrlOf(database_); }

std::string PgTestServer::UrlOf(std::string_view database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + std::string(database);
}

Status PgTestServer::Stop() {
  if (!running_) return Status::Ok();
  HCPRP_RETURN_IF_ERROR(
      RunTool("pg_ctl", {"stop", "-w", "-t", "60", "-m", "fast", "-D", dir_ + "/data"}, 90));
  running_ = false;
  return Status::Ok();
}

Status PgTestServer::Restart() {
  if (running_) return Status::Ok();
  return StartServer();
}

Status PgTestServer::Exec(const std::string& sql) const {
  HCPRP_ASSIGN_OR_RETURN(auto c, PgConnection::Connect(Url(), "", 10));
  HCPRP_RETURN_IF_ERROR(c->ExecSql(sql, "test server"));
  return Status::Ok();
}

std::string PgTestServer::Log() const { return ReadFile(dir_ + "/server.log"); }

}  // namespace hcprp::store::postgres
