// An HTTP/1.1 server that is only transport: it reads requests, hands each one to a plain
// synchronous function on a worker thread, and writes the answer back.
//
//   auto server = http::Server::Start(options, [](http::Request&& req) { return http::Response{...}; });
//   uint16_t port = (*server)->port();
//   ...
//   (*server)->Stop();
//
// Handlers are ordinary functions from request to response, so they are tested without sockets.
// They run on a worker pool that is separate from the I/O threads and grows (up to
// ServerOptions::max_threads) when every worker is busy, so a handler that blocks (a long-poll)
// never stalls other connections. Sessions enforce header and body limits and read, write and
// idle timeouts.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "http/message.h"
#include "http/url.h"
#include "tls/context.h"
#include "tls/peer_certificate.h"

namespace hcprp::http {

// Who sent a request.
struct Peer {
  std::string address;  // IP literal
  uint16_t port = 0;
};

using Handler = std::function<Response(Request&&)>;
using PeerHandler = std::function<Response(Request&&, const Peer&)>;
// Builds the answer to a request whose body is over the limit; gets the request without its body.
using TooLargeHandler = std::function<Response(const Request& header_only)>;
// Judges a request from its headers alone, before any of its body is read or "100 Continue" is sent:
// an answer refuses it (sent at once; the body is never read and the connection is closed), nullopt
// lets it through. Called on I/O threads, concurrently: must be thread-safe and must not block.
using HeaderScreen = std::function<std::optional<Response>(const Request& header_only)>;
// Builds the answer sent, without reading a request, on a connection over ServerOptions::max_connections.
using OverloadHandler = std::function<Response()>;

// Why a caller was refused: a short stable name chosen by the authenticator (such as
// "unknown_certificate"), fit for the refusal answer and for a metrics label.
struct Refusal {
  std::string reason;
};
// Decides whether the client of a TLS connection may send requests, from the certificate it presented
// (null: none); nullopt trusts it. The transport holds no trust policy of its own: the composition root
// supplies one. Called on I/O threads, concurrently: must be thread-safe and must not block for long.
using Authenticator = std::function<std::optional<Refusal>(const tls::PeerCertificate* peer)>;
// The answer to a request of a refused caller.
using RefusedHandler = std::function<Response(const Request&, const Refusal&, const Peer&)>;

// TLS on a listener, and who may use it.
struct ServerTls {
  std::shared_ptr<tls::ServerContext> context;  // null: plain HTTP
  // Judges the client before the first request outside open_paths and again before the first one
  // after each recheck_interval. Unset: every client that completes the handshake is trusted.
  Authenticator authenticate;
  // Paths (without query) an untrusted caller may still request: health probes.
  std::vector<std::string> open_paths = {"/healthz", "/readyz"};
  // The answer to each request of an untrusted caller outside open_paths, sent once its headers are read:
  // the handler never sees the request, its body is not read (no "100 Continue") and the connection is
  // closed after the answer. Default: 401, text body.
  RefusedHandler on_refused;
  // How long a connection's verdict stands before a request has it judged again (a rotated trusted set
  // reaches keep-alive connections within it). Zero: before every request.
  std::chrono::milliseconds recheck_interval{1'000};
  // Time for the TLS handshake, from the connection's first byte.
  std::chrono::milliseconds handshake_timeout{10'000};
};

struct ServerOptions {
  Endpoint listen{"127.0.0.1", 0};  // port 0: ephemeral, see Server::port()
  int io_threads = 1;               // threads running socket I/O
  int threads = 4;                  // handler workers kept running
  int max_threads = 256;            // handler workers at most; extra ones exit after idling
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 4 * 1024 * 1024;
  // Time to receive the rest of a request once its first byte arrived, and to write a response.
  std::chrono::milliseconds read_timeout{30'000};
  // Time a keep-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{60'000};
  // Answer for a body over max_body_bytes; the connection is then closed. Default: 413, text body.
  TooLargeHandler on_too_large;
  // Open connections at most; a connection accepted beyond them gets on_overloaded's answer and is
  // closed, so a flood cannot exhaust the process's file descriptors. Default answer: 503, text body,
  // Retry-After: 1.
  size_t max_connections = 10'000;
  OverloadHandler on_overloaded;
  // Refuses requests on their headers (an unauthenticated caller) before their bodies; unset: none.
  HeaderScreen screen;
  // HTTPS when tls.context is set. A plaintext request on a TLS listener gets a plaintext 400.
  ServerTls tls;
  // Value of the Server header; empty for none.
  std::string server_header = "hcprp";
};

// Thread-safe. Stop() (or the destructor) must be called before the handler's captures go away.
class Server {
 public:
  // Binds, listens and starts serving. Bind failures (address in use, bad host) are errors.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, Handler handler);
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, PeerHandler handler);

  virtual ~Server() = default;

  // The bound port (the ephemeral one when options asked for port 0).
  virtual uint16_t port() const = 0;
  // "host:port" of the listening socket, e.g. "127.0.0.1:43121".
  virtual Endpoint endpoint() const = 0;

  // Graceful drain: stops accepting, closes idle connections, lets requests in flight finish and
  // answers them with "Connection: close", then after `deadline` closes whatever is left. Returns
  // once every connection is closed and every handler has returned (a handler that never returns
  // blocks Stop: handlers must bound their waits). Idempotent.
  virtual void Stop(std::chrono::milliseconds deadline = std::chrono::seconds(10)) = 0;

  // Number of open connections; for tests and metrics.
  virtual size_t connection_count() const = 0;
};

}  // namespace hcprp::http
