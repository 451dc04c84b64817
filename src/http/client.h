// A synchronous HTTP/1.1 client for http:// and https:// URLs with a keep-alive connection pool per host.
// Over TLS it verifies the server's certificate and host name, presents a client certificate when its
// context has one, and resumes the last TLS session of an endpoint on a new connection.
//
// Send() never throws: connection refused, reset or closed is kUnavailable, an expired timeout is
// kTimeout, a malformed response is kIoError. Retries are the caller's business; SendWithRetry()
// (retry.h) is a small helper for the common case.
//
// A request that fails, a timeout included, ends its connection with a reset rather than a FIN: the
// kernel drops what it had not sent, so a request the caller was told failed is never delivered
// later (a partition that heals would otherwise let TCP retransmit it). That connection is never
// reused.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "core/result.h"
#include "http/message.h"
#include "http/url.h"
#include "tls/context.h"

namespace hcprp::http {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5'000};  // resolve + connect
  size_t max_idle_per_host = 32;                     // pooled idle connections kept per endpoint
  // A pooled connection idle longer than this is closed instead of reused (keep it below the
  // server's idle timeout).
  std::chrono::milliseconds max_idle_time{30'000};
  size_t max_response_body_bytes = 64 * 1024 * 1024;
  std::string user_agent = "hcprp";
  // Set: connections are TLS (https). Unset: plain HTTP; https:// URLs are refused.
  std::shared_ptr<tls::ClientContext> tls;
};

// Thread-safe: any number of threads may Send at once; each request uses its own connection.
class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` to `endpoint` and reads the response; `timeout` covers writing the request
  // and reading the whole response (connecting has its own timeout). The request's target must be
  // origin-form ("/path?query"); Host, User-Agent and Content-Length are filled in when missing.
  // A pooled connection that turns out to be closed is replaced transparently when nothing of the
  // response was received and the request is idempotent or carries X-Idempotency-Key.
  Result<Response> Send(const Endpoint& endpoint, Request request, std::chrono::milliseconds timeout);

  // As above, with an absolute target ("http://host:port/path?query") naming the endpoint. The scheme
  // must match the client: https:// when ClientOptions::tls is set, http:// otherwise.
  Result<Response> Send(Request request, std::chrono::milliseconds timeout);

  // Closes every pooled connection.
  void CloseIdle();

  // Connections opened since construction; for tests of connection reuse.
  size_t connections_opened() const;
  // TLS connections whose handshake resumed an earlier session.
  size_t sessions_resumed() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hcprp::http
