// The admin listener's request handler: Prometheus metrics, the admin API for the service's
// operators, and the operations console (static files and the data it shows). A plain function
// from request to response (served by http::Server, tested without sockets).
//
//   GET  /metrics                                    the registry's exposition; no token needed unless
//                                                    AdminOptions::metrics_need_token
//   GET  /console/...                                the console's static files (no token);
//                                                    /console/?token=T sets the session cookie
//   Everything under /admin/ needs the token ("Authorization: Bearer T") or the console's session
//   cookie. The cookie holds a session value of this process, never the token; a request it
//   authenticates must come from the console's own origin: one whose Origin (or Sec-Fetch-Site) names
//   another origin is refused 403, and so is one that changes state (not GET or HEAD) without the
//   header "X-HCPRP-Console: 1", which a page of another origin cannot send without a CORS preflight
//   this listener never grants. Browsers treat every port of 127.0.0.1 as the same site, so
//   SameSite=Strict alone does not keep other local pages out.
//   Without credentials: 401 {"error":{"code":"AuthenticationFailed",...}}.
//   GET  /admin/operations?subscription=&state=&min_age_seconds=    non-terminal operations (store)
//   GET  /admin/resources?id=RESOURCE_ID             its documents (children included), its operations
//   POST /admin/operations/{subscription}/{id}/fail  {"reason": "..."}: ends it Failed (backend)
//   POST /admin/operations/{subscription}/{id}/redrive  checks it against the Cluster Service now
//   GET  /admin/orphans                              what the orphan collector would do (backend)
//   GET  /admin/console/{summary,subscriptions,resources,operations,operations/{sub}/{id},events}
//        the console's data, from the LiveView (memory, never the store); events is a
//        text/event-stream answer carrying the events after Last-Event-ID (waiting up to
//        event_wait for one), after which the browser's EventSource reconnects at once.
//
// Thread-safe (Handle may run on many threads; /admin/console/events blocks up to event_wait).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "admin/live_view.h"
#include "backend/backend.h"
#include "core/clock.h"
#include "core/log.h"
#include "http/message.h"
#include "metrics/registry.h"
#include "store/store.h"

namespace hcprp::admin {

struct AdminOptions {
  std::string token;                     // required, compared in constant time
  metrics::Registry* metrics = nullptr;  // required; not owned
  store::Store* store = nullptr;         // null: the store endpoints answer 404
  backend::Backend* backend = nullptr;   // null: fail, redrive and orphans answer 409
  LiveView* live = nullptr;              // null: the console's data endpoints answer 404
  std::string console_dir;               // static files of the console; "" : none
  std::chrono::milliseconds event_wait{15000};
  bool metrics_need_token = false;  // true where others than the machine's users can reach the listener
  bool secure_cookie = false;       // the listener is HTTPS: the cookie is sent over TLS only
};

class AdminApi {
 public:
  // Pointers in `options` and `clock` are not owned and must outlive the AdminApi.
  AdminApi(AdminOptions options, const Clock* clock, Logger logger);
  http::Response Handle(http::Request&& request);
  // The answer refusing `request` from its headers alone (no or wrong credentials, a cross-origin use
  // of the cookie); nullopt lets it through. Handle() applies it too; the listener calls it before
  // reading a body (http::ServerOptions::screen).
  std::optional<http::Response> Screen(const http::Request& request) const;

 private:
  enum class Credential { kNone, kToken, kSession };
  Credential CredentialOf(const http::Request& request) const;
  http::Response Console(std::string_view path, std::string_view query);
  http::Response Api(const http::Request& request, std::string_view path, std::string_view query);
  http::Response ConsoleData(const http::Request& request, std::string_view path, std::string_view query);
  http::Response ListOperations(std::string_view query);
  http::Response ShowResource(std::string_view query);
  http::Response Steer(const http::Request& request, std::string_view sub, std::string_view id,
                       std::string_view action);
  http::Response Orphans();

  const AdminOptions options_;
  const std::string session_;  // the console cookie's value: random, this process's only
  const Clock* const clock_;
  const Logger logger_;
};

// A token for the admin API: 32 random bytes in hex.
std::string NewAdminToken();

}  // namespace hcprp::admin
