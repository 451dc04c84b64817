// A throwaway PostgreSQL server for tests: a new cluster (initdb) in a temporary directory, a
// server on a free 127.0.0.1 port with its unix socket in that directory and fsync on, torn down
// (stopped, directory removed) by the destructor. PostgreSQL refuses to run as root: when the test
// runs as root the server binaries run as the "postgres" user (runuser), on a directory chowned
// to it.
//
// The binaries are found in $HCPRP_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin,
// else on PATH. Their absence is an error (kUnavailable with a message saying what to install):
// tests fail rather than skip.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace hcprp::store::postgres {

class PgTestServer {
 public:
  // initdb, start, and create the database `database`. Takes a few seconds.
  static Result<std::unique_ptr<PgTestServer>> Start(std::string database = "hcprp_test");
  // A server started on first use and shared by the whole process (stopped at exit). Returns
  // nullptr and sets `error` when it could not be started.
  static PgTestServer* Shared(std::string* error);

  ~PgTestServer();
  PgTestServer(const PgTestServer&) = delete;
  PgTestServer& operator=(const PgTestServer&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/<database>
  std::string Url() const;
  std::string UrlOf(std::string_view database) const;
  int port() const { return port_; }

  // Stops the server (fast shutdown: sessions are terminated); the data stays.
  Status Stop();
  // Starts it again on the same data directory and port.
  Status Restart();
  // Runs SQL on the database as the superuser.
  Status Exec(const std::string& sql) const;
  // The server's log, for failure messages.
  std::string Log() const;

 private:
  PgTestServer() = default;
  Status RunTool(const std::string& tool, std::vector<std::string> args, int timeout_seconds) const;
  Status StartServer();

  std::string bin_;  // directory of initdb, pg_ctl
  std::string dir_;  // temporary directory (owned by the server's user)
  std::string database_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace hcprp::store::postgres
