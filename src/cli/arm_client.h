// A small ARM client: sends requests to a resource provider endpoint the way ARM does and waits on
// long-running operations the way ARM clients do (Azure-AsyncOperation, then Location, honouring
// Retry-After).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "api/api.h"
#include "core/json.h"
#include "core/result.h"
#include "http/client.h"
#include "tls/context.h"

namespace hcprp::cli {

struct ArmClientOptions {
  std::string endpoint = "https://127.0.0.1:8443";  // scheme://host:port of the frontend
  // For https endpoints: the CA that signed the frontend's certificate and the client certificate ARM
  // presents. Required for https, unused for http.
  std::shared_ptr<tls::ClientContext> tls;
  std::string api_version = std::string(api::kStableVersion);
  std::string tenant_id;         // sent as x-ms-home-tenant-id
  std::string client_object_id;  // sent as x-ms-client-object-id
  std::chrono::milliseconds request_timeout{30'000};
  // Upper bound on the wait between two polls, whatever Retry-After says (0: obey Retry-After).
  std::chrono::milliseconds max_poll_interval{2'000};
  std::chrono::milliseconds wait_timeout{std::chrono::hours(13)};
};

struct ArmResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  json::value body;                            // null when empty; a string when not JSON
  std::string Header(const std::string& lower_name) const;
};

// Progress of a long-running operation, reported on every poll.
struct Progress {
  std::string status;  // the operation status ("Accepted", "Provisioning", ...)
  std::chrono::steady_clock::duration elapsed;
};

// Thread-compatible (use from one thread).
class ArmClient {
 public:
  explicit ArmClient(ArmClientOptions options);

  // Sends METHOD path?api-version=... with an optional JSON body. `api_version` overrides the default.
  Result<ArmResponse> Call(http::Verb method, const std::string& path, const json::value* body = nullptr,
                           const std::string& api_version = "");
  // GET of an absolute URL (a polling URL from a header).
  Result<ArmResponse> GetUrl(const std::string& url);

  // Waits for the operation started by `initial` (a 201/202 response) to end. Returns the final
  // response: for a finished operation with a Location header, the GET of that Location; otherwise
  // the last status resource. An operation that ends Failed or Canceled is an Error whose message is
  // the ARM error JSON.
  Result<ArmResponse> Wait(const ArmResponse& initial,
                           const std::function<void(const Progress&)>& on_progress);

  const ArmClientOptions& options() const { return options_; }

 private:
  Result<ArmResponse> Send(http::Request req, const http::Url& url);

  ArmClientOptions options_;
  http::Client http_;
};

// "Succeeded", "Failed", "Canceled".
bool IsTerminalStatus(std::string_view status);

}  // namespace hcprp::cli
