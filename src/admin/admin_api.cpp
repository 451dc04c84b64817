#include "admin/admin_api.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "arm/documents.h"
#include "core/azure_resource_id.h"
#include "core/time.h"
#include "core/url_encoding.h"
#include "http/bearer.h"
#include "http/url.h"

namespace hcprp::admin {

namespace {

using http::Response;
using http::StatusCode;

constexpr std::string_view kCookie = "hcprp_session";
constexpr std::string_view kConsoleHeader = "X-HCPRP-Console";

Response Json(StatusCode status, const json::value& body) {
  Response r = http::JsonResponse(status, json::serialize(body));
  r.set(http::Field::cache_control, "no-store");
  return r;
}

Response ErrorResponse(StatusCode status, std::string_view code, std::string message,
                       std::string target = "") {
  json::object e{{"code", code}, {"message", std::move(message)}};
  if (!target.empty()) e["target"] = target;
  return Json(status, json::object{{"error", std::move(e)}});
}

using http::ConstantTimeEquals;

Response Unauthenticated() {
  Response r = ErrorResponse(StatusCode::unauthorized, "AuthenticationFailed",
                             "The admin API needs the admin token: 'Authorization: Bearer <token>'.");
  r.set(http::Field::www_authenticate, "Bearer realm=\"hcprp-admin\"");
  return r;
}

// True when a request authenticated by the cookie comes from the page that holds it: no Origin or
// Sec-Fetch-Site naming another origin, and for a change the console's header, which a page of another
// origin cannot add without a preflight.
bool SameOrigin(const http::Request& request) {
  if (auto it = request.find(http::Field::origin); it != request.end()) {
    std::string_view origin = it->value();
    auto scheme_end = origin.find("://");
    std::string_view host = request[http::Field::host];
    if (scheme_end == std::string_view::npos || host.empty() ||
        !EqualsIgnoreCase(origin.substr(scheme_end + 3), host)) {
      return false;
    }
  }
  if (auto it = request.find("Sec-Fetch-Site"); it != request.end()) {
    if (it->value() != "same-origin" && it->value() != "none") return false;
  }
  const bool read = request.method() == http::Verb::get || request.method() == http::Verb::head;
  return read || request[kConsoleHeader] == "1";
}

Response FromError(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kNotFound:
      return ErrorResponse(StatusCode::not_found, "NotFound", e.message());
    case ErrorCode::kConflict:
    case ErrorCode::kAlreadyExists:
      return ErrorResponse(StatusCode::conflict, "Conflict", e.message());
    case ErrorCode::kPreconditionFailed:
      return ErrorResponse(StatusCode::conflict, "OperationAlreadyEnded", e.message());
    case ErrorCode::kInvalidArgument:
      return ErrorResponse(StatusCode::bad_request, "InvalidRequestContent", e.message());
    case ErrorCode::kUnavailable:
    case ErrorCode::kIoError:
    case ErrorCode::kTimeout: {
      Response r = ErrorResponse(StatusCode::service_unavailable, "ServiceUnavailable", e.message());
      r.set(http::Field::retry_after, "5");
      return r;
    }
    default:
      return ErrorResponse(StatusCode::internal_server_error, "InternalServerError", e.message());
  }
}

std::string CookieValue(std::string_view header, std::string_view name) {
  size_t i = 0;
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ';')) ++i;
    size_t end = header.find(';', i);
    if (end == std::string_view::npos) end = header.size();
    std::string_view pair = header.substr(i, end - i);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return std::string(pair.substr(eq + 1));
    i = end + 1;
  }
  return "";
}

std::string ContentTypeOf(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  return "text/plain; charset=utf-8";
}

size_t SizeParam(std::string_view query, std::string_view name, size_t fallback, size_t max) {
  auto v = http::FindQueryParam(query, name);
  if (!v || v->empty()) return fallback;
  try {
    long long n = std::stoll(*v);
    if (n < 0) return fallback;
    return std::min(static_cast<size_t>(n), max);
  } catch (...) {
    return fallback;
  }
}

std::string Param(std::string_view query, std::string_view name) {
  return http::FindQueryParam(query, name).value_or("");
}

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    size_t end = path.find('/', i);
    if (end == std::string_view::npos) end = path.size();
    // A segment with a malformed escape is kept as written: it names nothing the admin API knows.
    std::string_view segment = path.substr(i, end - i);
    auto decoded = PercentDecode(segment);
    out.push_back(decoded.ok() ? std::move(*decoded) : std::string(segment));
    i = end;
  }
  return out;
}

std::string SubscriptionOf(std::string_view resource_id) {
  AzureResourceId id;
  if (!ParseAzureResourceId(resource_id, id).ok()) return "";
  return std::string(id.subscription);
}

json::object DocumentJson(const store::Document& d) {
  return {{"id", d.id},
          {"partitionKey", d.partition_key},
          {"etag", d.etag},
          {"timestamp", FormatRfc3339(FromUnixMillis(d.timestamp_ms), true)},
          {"body", d.body}};
}

// The admin view of an operation document.
json::object OperationSummary(const store::Document& d, TimePoint now) {
  json::object o{{"id", d.id}, {"subscription", d.partition_key}};
  const json::object* body = d.body.if_object();
  const json::object* p = body ? GetObject(*body, "properties") : nullptr;
  if (p == nullptr) return o;
  for (std::string_view k :
       {"request", "status", "externalId", "internalId", "startTime", "lastTransitionTime"}) {
    if (auto v = GetString(*p, k)) o[k] = *v;
  }
  if (auto start = ParseRfc3339(GetString(*p, "startTime").value_or("")); start.ok()) {
    o["ageSeconds"] = std::chrono::duration<double>(now - *start).count();
  }
  if (const json::object* e = GetObject(*p, "error")) o["error"] = *e;
  return o;
}

}  // namespace

std::string NewAdminToken() {
  std::random_device rd;
  std::ostringstream out;
  for (int i = 0; i < 8; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    out << buf;
  }
  return out.str();
}

AdminApi::AdminApi(AdminOptions options, const Clock* clock, Logger logger)
    : options_(std::move(options)), session_(NewAdminToken()), clock_(clock), logger_(std::move(logger)) {}

AdminApi::Credential AdminApi::CredentialOf(const http::Request& request) const {
  if (options_.token.empty()) return Credential::kNone;
  if (ConstantTimeEquals(http::BearerToken(request), options_.token)) return Credential::kToken;
  if (auto it = request.find(http::Field::cookie); it != request.end()) {
    if (ConstantTimeEquals(CookieValue(it->value(), kCookie), session_)) return Credential::kSession;
  }
  return Credential::kNone;
}

std::optional<Response> AdminApi::Screen(const http::Request& request) const {
  std::string_view path = http::SplitTarget(request.target()).path;
  if (!path.starts_with("/admin/") && !(path == "/metrics" && options_.metrics_need_token))
    return std::nullopt;
  switch (CredentialOf(request)) {
    case Credential::kToken:
      return std::nullopt;
    case Credential::kSession:
      if (SameOrigin(request)) return std::nullopt;
      return ErrorResponse(StatusCode::forbidden, "CrossOriginRequestRefused",
                           "A request authenticated by the console's cookie must come from the console "
                           "(same origin; changes carry the header X-HCPRP-Console: 1).");
    case Credential::kNone:
      break;
  }
  return Unauthenticated();
}

Response AdminApi::Handle(http::Request&& request) {
  auto target = http::SplitTarget(request.target());
  std::string_view path = target.path;
  const bool read = request.method() == http::Verb::get || request.method() == http::Verb::head;
  Response res;
  if (auto refused = Screen(request)) {
    res = std::move(*refused);
  } else if (path == "/metrics" && read) {
    res = http::MakeResponse(StatusCode::ok, options_.metrics->Expose(), metrics::kContentType);
  } else if ((path == "/" || path == "/console") && read) {
    res = http::MakeResponse(StatusCode::found);
    res.set(http::Field::location, "/console/");
  } else if (path.starts_with("/console/") && read) {
    res = Console(path.substr(std::string_view("/console").size()), target.query);
  } else if (path.starts_with("/admin/")) {
    res = Api(request, path, target.query);
  } else {
    res = ErrorResponse(StatusCode::not_found, "NotFound", "The requested path was not found.");
  }
  res.version(request.version());
  res.keep_alive(request.keep_alive());
  res.set("X-Content-Type-Options", "nosniff");
  res.prepare_payload();
  if (request.method() == http::Verb::head) res.body().clear();
  return res;
}

Response AdminApi::Console(std::string_view path, std::string_view query) {
  if (auto token = http::FindQueryParam(query, "token")) {
    // The link printed at start-up: trade the token for a cookie and drop it from the address bar.
    if (!ConstantTimeEquals(*token, options_.token)) {
      return ErrorResponse(StatusCode::unauthorized, "AuthenticationFailed", "The admin token is not valid.");
    }
    Response r = http::MakeResponse(StatusCode::see_other);
    r.set(http::Field::location, "/console/");
    r.set(http::Field::set_cookie, std::string(kCookie) + "=" + session_ +
                                       "; Path=/; HttpOnly; SameSite=Strict" +
                                       (options_.secure_cookie ? "; Secure" : ""));
    return r;
  }
  if (options_.console_dir.empty()) {
    return ErrorResponse(StatusCode::not_found, "NotFound", "This process serves no console.");
  }
  std::string name = path == "/" ? "index.html" : std::string(path.substr(1));
  // Only plain names of files in the console's folder (no sub-paths, no dot files).
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name[0] == '.') {
    return ErrorResponse(StatusCode::not_found, "NotFound", "The requested path was not found.");
  }
  std::filesystem::path file = std::filesystem::path(options_.console_dir) / name;
  std::ifstream in(file, std::ios::binary);
  if (!in) return ErrorResponse(StatusCode::not_found, "NotFound", "The requested path was not found.");
  std::ostringstream body;
  body << in.rdbuf();
  Response r = http::MakeResponse(StatusCode::ok, body.str(), ContentTypeOf(file));
  r.set(http::Field::cache_control, "no-cache");
  return r;
}

Response AdminApi::Api(const http::Request& request, std::string_view path, std::string_view query) {
  const bool get = request.method() == http::Verb::get || request.method() == http::Verb::head;
  const bool post = request.method() == http::Verb::post;
  auto s = Segments(path);  // s[0] == "admin"
  if (s.size() >= 2 && s[1] == "console") return ConsoleData(request, path, query);
  if (s.size() == 2 && s[1] == "operations" && get) return ListOperations(query);
  if (s.size() == 2 && s[1] == "resources" && get) return ShowResource(query);
  if (s.size() == 2 && s[1] == "orphans" && get) return Orphans();
  if (s.size() == 5 && s[1] == "operations" && (s[4] == "fail" || s[4] == "redrive")) {
    if (!post) return ErrorResponse(StatusCode::method_not_allowed, "MethodNotAllowed", "Use POST.");
    return Steer(request, s[2], s[3], s[4]);
  }
  return ErrorResponse(StatusCode::not_found, "NotFound", "The requested path was not found.");
}

Response AdminApi::ListOperations(std::string_view query) {
  if (options_.store == nullptr)
    return ErrorResponse(StatusCode::not_found, "NotFound", "This process has no store.");
  const std::string subscription = Param(query, "subscription");
  const std::string state = Param(query, "state");
  const std::string min_age_text = Param(query, "min_age_seconds");
  double min_age = 0;
  if (!min_age_text.empty()) {
    try {
      min_age = std::stod(min_age_text);
    } catch (...) {
      return ErrorResponse(StatusCode::bad_request, "InvalidParameter", "min_age_seconds must be a number.",
                           "min_age_seconds");
    }
  }
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.resource_type = std::string(arm::kOperationDocType);
  q.non_terminal_only = true;
  q.max_items = 500;
  if (!subscription.empty()) q.partition_key = arm::PartitionKey(subscription);
  const TimePoint now = clock_->Now();
  json::array items;
  Status st = store::ForEachDocument(*options_.store, q, [&](const store::Document& d) {
    json::object o = OperationSummary(d, now);
    if (!state.empty() && !EqualsIgnoreCase(GetString(o, "status").value_or(""), state)) return;
    auto age = o.if_contains("ageSeconds");
    if (min_age > 0 && (age == nullptr || age->as_double() < min_age)) return;
    items.push_back(std::move(o));
  });
  if (!st.ok()) return FromError(st.error());
  return Json(StatusCode::ok, json::object{{"value", std::move(items)}});
}

Response AdminApi::ShowResource(std::string_view query) {
  if (options_.store == nullptr)
    return ErrorResponse(StatusCode::not_found, "NotFound", "This process has no store.");
  const std::string id = Param(query, "id");
  const std::string sub = SubscriptionOf(id);
  if (id.empty() || sub.empty()) {
    return ErrorResponse(StatusCode::bad_request, "InvalidParameter",
                         "'id' must be an ARM resource ID (/subscriptions/{id}/...).", "id");
  }
  const std::string pk = arm::PartitionKey(sub);
  json::array documents;
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = pk;
  q.resource_id = id;
  auto add = [&](const store::Document& d) { documents.push_back(DocumentJson(d)); };
  if (Status st = store::ForEachDocument(*options_.store, q, add); !st.ok()) return FromError(st.error());
  if (documents.empty()) {
    return ErrorResponse(StatusCode::not_found, "NotFound", "No resource document has the ID '" + id + "'.",
                         "id");
  }
  q.resource_id.reset();
  q.resource_id_prefix = id + "/";
  if (Status st = store::ForEachDocument(*options_.store, q, add); !st.ok()) return FromError(st.error());
  // Operations name their resource in externalId: those of the resource and of its children.
  json::array operations;
  store::QueryOptions oq;
  oq.container = std::string(store::kResources);
  oq.partition_key = pk;
  oq.resource_type = std::string(arm::kOperationDocType);
  const std::string lower = ToLower(id);
  const TimePoint now = clock_->Now();
  Status st = store::ForEachDocument(*options_.store, oq, [&](const store::Document& d) {
    json::object o = OperationSummary(d, now);
    std::string ext = ToLower(GetString(o, "externalId").value_or(""));
    if (ext == lower || ext.starts_with(lower + "/")) operations.push_back(std::move(o));
  });
  if (!st.ok()) return FromError(st.error());
  return Json(StatusCode::ok,
              json::object{{"documents", std::move(documents)}, {"operations", std::move(operations)}});
}

Response AdminApi::Steer(const http::Request& request, std::string_view sub, std::string_view id,
                         std::string_view action) {
  if (options_.backend == nullptr) {
    return ErrorResponse(StatusCode::conflict, "NoBackend",
                         "This process runs no backend; ask the admin listener of a backend process.");
  }
  const std::string pk = arm::PartitionKey(sub);
  if (action == "redrive") {
    Status st = options_.backend->RedriveOperation(pk, id);
    if (!st.ok()) return FromError(st.error());
    logger_.Info("admin: operation re-driven", {{"subscription", pk}, {"operation", std::string(id)}});
    return Json(StatusCode::accepted, json::object{{"id", id}, {"subscription", pk}, {"redriven", true}});
  }
  auto body = ParseJson(request.body());
  const json::object* o = body.ok() ? body->if_object() : nullptr;
  std::string reason = o ? std::string(GetString(*o, "reason").value_or("")) : "";
  if (reason.empty() || reason.size() > 1024) {
    return ErrorResponse(StatusCode::bad_request, "InvalidRequestContent",
                         "The body must be {\"reason\": \"...\"} with a reason of 1 to 1024 characters.",
                         "reason");
  }
  Status st = options_.backend->FailOperation(
      pk, id, "InternalServerError", "The operation was ended by the service's operators: " + reason);
  if (!st.ok()) return FromError(st.error());
  logger_.Warn("admin: operation failed",
               {{"subscription", pk}, {"operation", std::string(id)}, {"reason", reason}});
  return Json(StatusCode::ok, json::object{{"id", id}, {"subscription", pk}, {"status", "Failed"}});
}

Response AdminApi::Orphans() {
  if (options_.backend == nullptr) {
    return ErrorResponse(StatusCode::conflict, "NoBackend",
                         "This process runs no backend; ask the admin listener of a backend process.");
  }
  auto plan = options_.backend->PlanOrphanCollection();
  if (!plan.ok()) return FromError(plan.error());
  json::array items;
  for (const auto& c : plan->candidates) {
    items.push_back(json::object{{"internalId", c.internal_id},
                                 {"state", c.state},
                                 {"since", FormatRfc3339(c.since, true)},
                                 {"deleteAfter", FormatRfc3339(c.due_at, true)},
                                 {"action", c.due ? "delete" : "wait"}});
  }
  return Json(StatusCode::ok,
              json::object{{"coordinator", plan->coordinator},
                           {"windowSeconds", std::chrono::duration<double>(plan->window).count()},
                           {"value", std::move(items)}});
}

Response AdminApi::ConsoleData(const http::Request& request, std::string_view path, std::string_view query) {
  if (options_.live == nullptr)
    return ErrorResponse(StatusCode::not_found, "NotFound", "This process has no store.");
  auto s = Segments(path);  // admin, console, ...
  if (request.method() != http::Verb::get && request.method() != http::Verb::head) {
    return ErrorResponse(StatusCode::method_not_allowed, "MethodNotAllowed", "Use GET.");
  }
  ListQuery q;
  q.type = Param(query, "type");
  q.subscription = Param(query, "subscription");
  q.search = Param(query, "q");
  q.in_flight_only = Param(query, "inflight") == "1";
  q.offset = SizeParam(query, "offset", 0, SIZE_MAX / 2);
  q.limit = SizeParam(query, "limit", 50, 500);
  if (s.size() == 3 && s[2] == "summary") return Json(StatusCode::ok, options_.live->Summary());
  if (s.size() == 3 && s[2] == "subscriptions") {
    return Json(StatusCode::ok, json::object{{"items", options_.live->ListSubscriptions()}});
  }
  if (s.size() == 3 && s[2] == "resources") return Json(StatusCode::ok, options_.live->ListResources(q));
  if (s.size() == 3 && s[2] == "operations") return Json(StatusCode::ok, options_.live->ListOperations(q));
  if (s.size() == 5 && s[2] == "operations") {
    auto op = options_.live->Operation(s[3], s[4]);
    if (!op) return ErrorResponse(StatusCode::not_found, "NotFound", "No such operation.");
    return Json(StatusCode::ok, *op);
  }
  if (s.size() == 3 && s[2] == "events") {
    uint64_t after = 0;
    std::string last;
    if (auto it = request.find("Last-Event-ID"); it != request.end()) last = std::string(it->value());
    if (last.empty()) last = Param(query, "after");
    try {
      after = last.empty() ? 0 : std::stoull(last);
    } catch (...) {
      after = 0;
    }
    // A first connection answers at once with the position; later ones wait for news.
    Events ev =
        options_.live->WaitEvents(after, after == 0 ? std::chrono::milliseconds(0) : options_.event_wait);
    std::string body = "retry: 100\n";
    if (ev.reset) body += "event: reset\ndata: {}\n\n";
    if (after == 0 || ev.events.empty()) {
      body += "id: " + std::to_string(ev.last) + "\nevent: position\ndata: {}\n\n";
    }
    for (const auto& [id, data] : ev.events) body += "id: " + std::to_string(id) + "\ndata: " + data + "\n\n";
    Response r = http::MakeResponse(StatusCode::ok, std::move(body), "text/event-stream");
    r.set(http::Field::cache_control, "no-store");
    return r;
  }
  return ErrorResponse(StatusCode::not_found, "NotFound", "The requested path was not found.");
}

}  // namespace hcprp::admin
