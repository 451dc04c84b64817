// The ARM frontend of hcprp: a function from an HTTP request to an HTTP response, with no sockets of
// its own, that serves the ARM RPC of Microsoft.RedHatOpenShift (clusters, node pools, external
// auths, their lists and actions), the operation status and result endpoints, subscription
// lifecycle, metadata (versions, role sets, operations list), deployment preflight and health probes.
//
// The transport (src/http) owns sockets, timeouts and draining; it hands every parsed request to
// Frontend::Handle. Handle never throws for any input and always returns an ARM-shaped response
// carrying x-ms-request-id. It is not pure: it reads and writes the store and calls the Cluster
// Service through the interfaces Create was given.
//
// HEAD is served wherever GET is, as GET without the body (Content-Length is the GET body's).
//
// Thread-safety: Handle may be called from many threads at once. The store, Cluster Service client,
// clock and log sink must be thread-safe (their interfaces say they are).
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "clusterservice/client.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/result.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::frontend {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct FrontendOptions {
  // The Azure region this deployment serves. A create takes it as the resource's location whatever
  // the body says (a body without one is accepted), as the real service does; a replace keeps the
  // stored location.
  std::string location = "eastus";
  // Retry-After (seconds) on 202 responses and on operation results still running. ARM wants 10-600.
  int retry_after_seconds = 10;
  // Lifetime of operation documents (7 days by default; docs/architecture.md, "Data model").
  int64_t operation_ttl_seconds = 604800;
  // Bodies larger than this are refused (ARM's limit is 4 MiB).
  size_t max_body_bytes = 4 * 1024 * 1024;
  // Nesting limit when parsing request bodies.
  size_t max_json_depth = 64;
  // Used to build absolute header URLs when a request has neither Referer nor Host.
  std::string default_base_url = "http://localhost";
  // Scheme of the URLs built from the Host header (no Referer): "https" behind a TLS listener.
  std::string scheme = "http";
  // How many times a request is re-evaluated after losing a store race before answering 409 (each
  // after a pause growing by a millisecond: a busy resource's writers take turns).
  int max_store_retries = 8;
  // Bytes of rendered resources kept for GETs and lists (JSON text per resource version and
  // api-version, least recently used dropped first); 0 renders every resource every time.
  size_t render_cache_bytes = 64 * 1024 * 1024;
  // Store batch size when a delete fans out over many resources (children, subscription delete).
  size_t delete_batch_size = 50;
  // Part of readiness beside a point read of the store: whether the store can write (for example
  // store::WriteHealthStore::CheckWritable). Empty: reads alone decide.
  std::function<Status()> write_probe;
  // Where the frontend registers its metrics (not owned, outlives the Frontend); null: none.
  //   hcprp_frontend_requests_total{route,method,api_version,code}  route: RouteTemplate(), "unmatched"
  //   hcprp_frontend_request_duration_seconds{route,method}
  //   hcprp_frontend_requests_in_flight
  //   hcprp_frontend_bodies_refused_total{reason}                    too_large, media_type
  metrics::Registry* metrics = nullptr;
};

// The bodies-refused counter of `registry` for `reason` (the HTTP server's on_too_large hook counts
// its refusals there too).
metrics::Counter* BodiesRefusedCounter(metrics::Registry& registry, std::string_view reason);

// The answer to a request whose body is over `max_body` bytes, for the HTTP server's on_too_large
// hook (http::ServerOptions::on_too_large), which sees the request without its body: 413 with the
// ARM error body and the x-ms-request-id, x-ms-error-code and correlation headers that Handle gives
// the same refusal. Thread-safe.
Response TooLargeResponse(const Request& header_only, size_t max_body);

// The answer on a connection beyond the HTTP server's connection cap, for its on_overloaded hook
// (http::ServerOptions::on_overloaded), which reads no request: 503 ServiceUnavailable with the ARM
// error body, an x-ms-request-id and Retry-After: 1. Thread-safe.
Response OverloadedResponse();
// The answer to a caller that did not authenticate as ARM (`reason`: no_certificate, unknown_certificate,
// expired, ...): 401 AuthenticationFailed.
Response UnauthenticatedResponse(std::string_view reason);

class Frontend {
 public:
  // store, cluster_service and clock are not owned and must outlive the Frontend.
  static Result<std::unique_ptr<Frontend>> Create(FrontendOptions options, store::Store* store,
                                                  clusterservice::Client* cluster_service, const Clock* clock,
                                                  Logger logger);
  ~Frontend();
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  Response Handle(Request&& request);

  struct Impl;

 private:
  explicit Frontend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hcprp::frontend
