// TLS contexts built from PEM files. A context is rebuilt when one of its files changes (modification
// time or size), checked whenever a connection asks for the current context: certificates rotate
// without a restart. Connections already open keep the context they started with.
//
//   auto server = tls::ServerContext::Load({.cert_file = "server.pem", .key_file = "server-key.pem"});
//   std::shared_ptr<boost::asio::ssl::context> ctx = (*server)->Current();  // per new connection
//
// Protocols: TLS 1.2 and 1.3 only; TLS 1.2 with ECDHE and AEAD cipher suites only.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/result.h"

namespace hcprp::tls {

struct ServerContextOptions {
  std::string cert_file;  // PEM: the certificate, then any intermediates
  std::string key_file;   // PEM private key
  // Who may connect:
  //  - client_ca_file set: a client certificate that chains to it is required (mutual TLS); the
  //    handshake fails otherwise.
  //  - request_client_certificate: a client certificate is asked for but not checked during the
  //    handshake; the server authenticates it afterwards (ARM's certificates are matched by thumbprint,
  //    see arm_trust.h).
  std::string client_ca_file;
  bool request_client_certificate = false;
};

struct ClientContextOptions {
  std::string ca_file;    // trust anchors for the server's certificate; empty: the system's
  std::string cert_file;  // client certificate (mutual TLS); empty: none
  std::string key_file;
};

// The modification time and size of a set of files, to notice a change.
class FileStamp {
 public:
  explicit FileStamp(std::vector<std::string> paths);
  // True when a file differs from the last Refresh() (or construction).
  bool Changed() const;
  void Refresh();

 private:
  struct Stamp {
    std::filesystem::file_time_type mtime{};
    uintmax_t size = 0;
    bool exists = false;
    bool operator==(const Stamp&) const = default;
  };
  std::vector<Stamp> Read() const;
  const std::vector<std::string> paths_;
  std::vector<Stamp> stamps_;
};

// A TLS context rebuilt by `build` when one of `files` changed, checked on every Current(); what
// ServerContext and ClientContext share. A rebuild that fails leaves the previous context in use.
// Thread-safe.
class ReloadingContext {
 public:
  using Builder = std::function<Result<std::shared_ptr<boost::asio::ssl::context>>()>;
  ReloadingContext(std::vector<std::string> files, Builder build,
                   std::shared_ptr<boost::asio::ssl::context> first);

  std::shared_ptr<boost::asio::ssl::context> Current();
  // Successful rebuilds so far.
  size_t reloads() const;

 private:
  const Builder build_;
  mutable Mutex mu_;
  FileStamp stamp_ HCPRP_GUARDED_BY(mu_);
  std::shared_ptr<boost::asio::ssl::context> current_ HCPRP_GUARDED_BY(mu_);
  size_t reloads_ HCPRP_GUARDED_BY(mu_) = 0;
};

// Thread-safe.
class ServerContext {
 public:
  // Reads the files; InvalidArgument when one cannot be read or the key does not match the certificate.
  static Result<std::shared_ptr<ServerContext>> Load(ServerContextOptions options);

  // The context for a new connection: rebuilt first when a file changed. A changed file that does not
  // load (half-written during a rotation) leaves the previous context in use until it loads.
  std::shared_ptr<boost::asio::ssl::context> Current() { return reloading_.Current(); }

  // Reloads done since Load (successful ones); for tests and logs.
  size_t reloads() const { return reloading_.reloads(); }

  const ServerContextOptions& options() const { return options_; }

 private:
  ServerContext(ServerContextOptions options, std::shared_ptr<boost::asio::ssl::context> first);
  static Result<std::shared_ptr<boost::asio::ssl::context>> Build(const ServerContextOptions& o);

  const ServerContextOptions options_;  // constant after construction
  ReloadingContext reloading_;
};

// Thread-safe. As ServerContext, for clients: verifies the server against ca_file (the host name is
// checked per connection by the client) and presents cert_file when set.
class ClientContext {
 public:
  static Result<std::shared_ptr<ClientContext>> Load(ClientContextOptions options);
  std::shared_ptr<boost::asio::ssl::context> Current() { return reloading_.Current(); }
  const ClientContextOptions& options() const { return options_; }

 private:
  ClientContext(ClientContextOptions options, std::shared_ptr<boost::asio::ssl::context> first);
  static Result<std::shared_ptr<boost::asio::ssl::context>> Build(const ClientContextOptions& o);

  const ClientContextOptions options_;  // constant after construction
  ReloadingContext reloading_;
};

}  // namespace hcprp::tls
