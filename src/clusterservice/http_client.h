// The Cluster Service client over HTTP (a real Cluster Service or hcprp's simulator).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "clusterservice/client.h"
#include "core/result.h"
#include "http/client.h"
#include "http/retry.h"

namespace hcprp::clusterservice {

struct HttpClientOptions {
  // "http://127.0.0.1:8081", or "https://..." with http.tls set; hrefs are appended to it.
  std::string base_url;
  std::chrono::milliseconds timeout{10'000};  // per attempt, for everything but WatchEvents
  // Extra time on top of the long-poll wait before a WatchEvents call gives up.
  std::chrono::milliseconds watch_margin{5'000};
  // Retries on 5xx, 429 and connection failures: for GET, PATCH (a merge patch is idempotent),
  // DELETE, actions, and POST with an idempotency key.
  http::RetryPolicy retry;
  http::ClientOptions http;
  size_t page_size = 500;  // List() page size
  // WatchEvents() page size: at most this many events a call. The backend applies a page while it
  // reads the next, so a page that is small against a burst keeps both going.
  size_t event_page_size = 250;
};

// Thread-safe. Errors as client.h says; messages carry the OCM code and reason.
class HttpClient final : public Client {
 public:
  static Result<std::unique_ptr<HttpClient>> Create(HttpClientOptions options);

  Result<json::object> Create(std::string_view collection_href, const json::object& body,
                              std::string_view idempotency_key) override;
  Result<json::object> Get(std::string_view href) override;
  Result<json::object> GetStatus(std::string_view href) override;
  Result<json::object> Update(std::string_view href, const json::object& patch) override;
  Status Delete(std::string_view href) override;
  Result<json::object> Action(std::string_view href, std::string_view action,
                              const json::object& body) override;
  Result<json::array> List(std::string_view collection_href, std::string_view search = "") override;
  Result<EventPage> WatchEvents(uint64_t after, std::chrono::milliseconds timeout) override;

 private:
  HttpClient(HttpClientOptions options, http::Endpoint endpoint, std::string path_prefix);

  // Sends with the retry policy; non-2xx answers become errors.
  Result<http::Response> Call(http::Verb verb, std::string target, const json::object* body,
                              std::string_view idempotency_key, bool retry,
                              std::chrono::milliseconds timeout);

  const HttpClientOptions options_;
  const http::Endpoint endpoint_;
  const std::string path_prefix_;  // path of base_url without the trailing slash
  http::Client http_;
};

// Maps an error answer of an OCM-style service to an Error (kNotFound, kInvalidArgument, kConflict,
// kPreconditionFailed for 410/412, kThrottled for 429, kUnavailable for 5xx, kInternal otherwise),
// keeping the OCM code and reason in the message.
Error ErrorFromResponse(const http::Response& res);

}  // namespace hcprp::clusterservice
