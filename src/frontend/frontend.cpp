// The request pipeline: header hygiene, body limits, routing, api-version, subscription state, then
// the handler; every response gets the ARM correlation headers and an access-log line.
#include "frontend/frontend.h"

#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <unordered_map>

#include "arm/headers.h"
#include "arm/system_data.h"
#include "core/url_encoding.h"
#include "core/uuid.h"
#include "frontend/internal.h"

namespace hcprp::frontend {

// The frontend's instruments; all null without a registry.
struct RequestMetrics {
  metrics::Family<metrics::Counter>* requests = nullptr;
  metrics::Family<metrics::Histogram>* latency = nullptr;
  metrics::Gauge* in_flight = nullptr;
  metrics::Counter* too_large = nullptr;
  metrics::Counter* media_type = nullptr;
};

struct Frontend::Impl {
  Env env;
  RequestMetrics metrics;
  // Distinguishes frontends in the per-thread cache of metric series (see Observe()).
  uint64_t instance = NextInstance();
  static uint64_t NextInstance() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
  }
  Response Dispatch(RequestContext& ctx);
  void Observe(const RequestContext& ctx, bhttp::verb method, int status, double seconds);
};

metrics::Counter* BodiesRefusedCounter(metrics::Registry& registry, std::string_view reason) {
  return registry
      .AddCounter("hcprp_frontend_bodies_refused_total", "Request bodies refused, by reason", {"reason"})
      .With({reason});
}

namespace {

using arm::CloudError;
namespace codes = arm::codes;

Response TooLargeReply(size_t max_body) {
  return ErrorReply(
      CloudError(413, codes::kRequestEntityTooLarge,
                 "The request body exceeds the maximum size of " + std::to_string(max_body) + " bytes."));
}

bool HasControlChars(std::string_view v) {
  for (unsigned char c : v) {
    if (c == '\r' || c == '\n' || c == '\0') return true;
  }
  return false;
}

// Header values echoed back must be plain printable ASCII of reasonable length.
bool SafeToEcho(std::string_view v) {
  if (v.empty() || v.size() > 256) return false;
  for (unsigned char c : v) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// The query's parameters by lower-cased name; the first occurrence of a name wins.
std::map<std::string, std::string> ParamsByName(std::string_view q) {
  std::map<std::string, std::string> out;
  for (auto& p : ParseQuery(q)) {
    std::string key = ToLower(p.name);
    if (!key.empty()) out.emplace(std::move(key), std::move(p.value));
  }
  return out;
}

bool ValidHost(std::string_view h) {
  if (h.empty() || h.size() > 255) return false;
  for (char c : h) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == ':' || c == '[' || c == ']' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// scheme://host[:port] of the Referer header, else http://{Host}, else the configured default.
std::string BaseUrl(const RequestContext& ctx, const FrontendOptions& options) {
  std::string referer = ctx.Header(arm::headers::kReferer);
  for (std::string_view scheme : {"https://", "http://"}) {
    if (StartsWithIgnoreCase(referer, scheme)) {
      std::string_view rest = std::string_view(referer).substr(scheme.size());
      std::string_view host = rest.substr(0, rest.find_first_of("/?#"));
      if (ValidHost(host)) return ToLower(scheme) + std::string(host);
    }
  }
  std::string host = ctx.Header("Host");
  if (ValidHost(host)) return options.scheme + "://" + host;
  return options.default_base_url;
}

CloudError UnknownApiVersion(const RequestContext& ctx, std::string_view type) {
  return {400, codes::kInvalidResourceType,
          "The resource type '" + std::string(type) + "' could not be found for API version '" +
              ctx.api_version + "'. The supported api-versions are '" + api::SupportedVersionsText() + "'."};
}

std::string_view RouteType(const Route& r) {
  switch (r.kind) {
    case RouteKind::kResource:
    case RouteKind::kChildList:
      return arm::ArmType(r.resource_kind);
    case RouteKind::kVersion:
    case RouteKind::kVersionList:
      return arm::kVersionType;
    case RouteKind::kRoleSet:
    case RouteKind::kRoleSetList:
      return arm::kRoleSetType;
    case RouteKind::kOperationStatus:
      return "Microsoft.RedHatOpenShift/locations/hcpOperationStatuses";
    case RouteKind::kOperationResult:
      return "Microsoft.RedHatOpenShift/locations/hcpOperationResults";
    case RouteKind::kOperationsList:
      return "Microsoft.RedHatOpenShift/operations";
    default:
      return arm::kClusterType;
  }
}

// Subscription lifecycle rules (ARM subscription contract).
std::optional<Response> CheckSubscription(Env& env, RequestContext& ctx) {
  const std::string pk = arm::PartitionKey(ctx.route.subscription_id);
  auto doc = env.store->Read(store::kResources, pk, pk);
  auto unregistered = [&] {
    return ErrorReply(CloudError(
        400, codes::kInvalidSubscriptionState,
        "Request is not allowed in unregistered subscription '" + ctx.route.subscription_id + "'."));
  };
  if (!doc.ok()) {
    if (doc.error().IsNotFound()) return unregistered();
    return ErrorReply(arm::FromError(doc.error()));
  }
  auto sub = arm::SubscriptionDocument::FromBody(std::move(doc->id), std::move(doc->body));
  if (!sub.ok()) return ErrorReply(arm::FromError(sub.error()));
  std::string state(arm::SubscriptionStateName(sub->state));
  switch (sub->state) {
    case arm::SubscriptionState::kRegistered:
      break;
    case arm::SubscriptionState::kUnregistered:
      return unregistered();
    case arm::SubscriptionState::kWarned:
    case arm::SubscriptionState::kSuspended:
      if (ctx.method != bhttp::verb::get && ctx.method != bhttp::verb::delete_ &&
          ctx.method != bhttp::verb::head) {
        return ErrorReply(CloudError(409, codes::kInvalidSubscriptionState,
                                     "Request is not allowed in subscription in state '" + state + "'."));
      }
      break;
    case arm::SubscriptionState::kDeleted:
      return ErrorReply(CloudError(400, codes::kInvalidSubscriptionState,
                                   "Request is not allowed in subscription in state '" + state + "'."));
  }
  if (ctx.tenant_id.empty()) {
    if (auto t = sub->tenant_id()) ctx.tenant_id = *t;
  }
  ctx.subscription = std::move(sub).value();
  return std::nullopt;
}

}  // namespace

Response Frontend::Impl::Dispatch(RequestContext& ctx) {
  const Request& req = *ctx.req;
  for (const auto& field : req) {
    if (HasControlChars(field.value()) || HasControlChars(field.name_string())) {
      return ErrorReply(CloudError(400, codes::kInvalidParameter,
                                   "The request header '" + std::string(field.name_string().substr(0, 64)) +
                                       "' contains invalid characters."));
    }
  }
  if (req.body().size() > env.options.max_body_bytes) return TooLargeReply(env.options.max_body_bytes);

  std::string_view target = req.target();
  size_t qpos = target.find('?');
  std::string_view raw_path = target.substr(0, qpos);
  std::string_view raw_query = qpos == std::string_view::npos ? "" : target.substr(qpos + 1);
  auto segments = SplitPath(raw_path);
  if (!segments.ok()) {
    return ErrorReply(CloudError(404, codes::kNotFound, "The requested path was not found."));
  }
  ctx.path.clear();
  for (const auto& s : *segments) ctx.path += "/" + s;
  auto matched = MatchRoute(*segments, ctx.method);
  if (auto* e = std::get_if<CloudError>(&matched)) return ErrorReply(*e);
  ctx.route = std::get<Route>(std::move(matched));
  ctx.route_template = RouteTemplate(ctx.route);
  ctx.query = ParamsByName(raw_query);

  if (ctx.route.NeedsApiVersion()) {
    auto it = ctx.query.find("api-version");
    if (it == ctx.query.end() || it->second.empty()) {
      return ErrorReply(CloudError(400, codes::kInvalidParameter,
                                   "The request is missing required parameter 'api-version'.",
                                   "api-version"));
    }
    ctx.api_version = it->second;
    bool supported = ctx.route.kind == RouteKind::kSubscription ? ctx.api_version == "2.0"
                                                                : api::IsSupportedVersion(ctx.api_version);
    if (!supported) {
      return ErrorReply(UnknownApiVersion(ctx, ctx.route.kind == RouteKind::kSubscription
                                                   ? std::string_view("Microsoft.Resources/subscriptions")
                                                   : RouteType(ctx.route)));
    }
  }
  if (!ctx.route.subscription_id.empty() && !arm::IsValidSubscriptionId(ctx.route.subscription_id)) {
    return ErrorReply(CloudError(400, codes::kInvalidSubscriptionId,
                                 "The provided subscription identifier '" +
                                     ctx.route.subscription_id.substr(0, 64) + "' is malformed or invalid.",
                                 "subscriptionId"));
  }
  if (ctx.method == bhttp::verb::put || ctx.method == bhttp::verb::patch || ctx.method == bhttp::verb::post) {
    std::string content_type(ctx.Header("Content-Type"));
    std::string base = content_type.substr(0, content_type.find(';'));
    while (!base.empty() && base.back() == ' ') base.pop_back();
    if (!EqualsIgnoreCase(base, "application/json") && (!req.body().empty() || !content_type.empty())) {
      return ErrorReply(CloudError(415, codes::kUnsupportedMediaType,
                                   "The content media type '" + content_type.substr(0, 100) +
                                       "' is not supported. Only 'application/json' is supported."));
    }
  }

  ctx.base_url = BaseUrl(ctx, env.options);
  ctx.tenant_id = ctx.Header(arm::headers::kHomeTenantId);
  ctx.client_object_id = ctx.Header(arm::headers::kClientObjectId);
  if (ctx.client_object_id.empty()) ctx.client_object_id = ctx.Header(arm::headers::kClientPuid);
  ctx.system_data = arm::ParseSystemData(ctx.Header(arm::headers::kSystemData));
  ctx.notification_uri = ctx.Header(arm::headers::kAsyncNotificationUri);

  if (ctx.route.SubscriptionScoped()) {
    if (auto stop = CheckSubscription(env, ctx)) return std::move(*stop);
  }

  switch (ctx.route.kind) {
    case RouteKind::kHealthz:
    case RouteKind::kReadyz:
      return HandleHealth(env, ctx);
    case RouteKind::kOperationsList:
    case RouteKind::kVersionList:
    case RouteKind::kVersion:
    case RouteKind::kRoleSetList:
    case RouteKind::kRoleSet:
      return HandleMetadata(env, ctx);
    case RouteKind::kSubscription:
      return HandleSubscription(env, ctx);
    case RouteKind::kClusterListBySub:
    case RouteKind::kClusterListByRg:
    case RouteKind::kChildList:
      return HandleResourceList(env, ctx);
    case RouteKind::kResource:
      return HandleResource(env, ctx);
    case RouteKind::kClusterAction:
      return HandleClusterAction(env, ctx);
    case RouteKind::kOperationStatus:
    case RouteKind::kOperationResult:
      return HandleOperation(env, ctx);
    case RouteKind::kPreflight:
      return HandlePreflight(env, ctx);
  }
  return ErrorReply(CloudError(404, codes::kNotFound, "The requested path was not found."));
}

Result<std::unique_ptr<Frontend>> Frontend::Create(FrontendOptions options, store::Store* store,
                                                   clusterservice::Client* cluster_service,
                                                   const Clock* clock, Logger logger) {
  if (store == nullptr || cluster_service == nullptr || clock == nullptr) {
    return Error::InvalidArgument("frontend needs a store, a Cluster Service client and a clock");
  }
  if (options.retry_after_seconds < 1 || options.max_body_bytes == 0 || options.operation_ttl_seconds < 1 ||
      options.max_store_retries < 0) {
    return Error::InvalidArgument("invalid frontend options");
  }
  if (!arm::IsValidLocation(options.location)) {
    return Error::InvalidArgument("the location '" + options.location + "' is not an Azure region name");
  }
  metrics::Registry* registry = options.metrics;
  auto impl = std::make_unique<Impl>(
      Impl{Env{std::move(options), store, cluster_service, clock, std::move(logger)}, RequestMetrics{}});
  if (registry != nullptr) {
    RequestMetrics& m = impl->metrics;
    m.requests =
        &registry->AddCounter("hcprp_frontend_requests_total",
                              "ARM requests answered, by route template, method, api-version and status",
                              {"route", "method", "api_version", "code"}, 2000);
    m.latency = &registry->AddHistogram("hcprp_frontend_request_duration_seconds",
                                        "Time to answer an ARM request, by route template and method",
                                        {"route", "method"}, metrics::LatencyBuckets());
    m.in_flight =
        registry->AddGauge("hcprp_frontend_requests_in_flight", "ARM requests being answered").With({});
    m.too_large = BodiesRefusedCounter(*registry, "too_large");
    m.media_type = BodiesRefusedCounter(*registry, "media_type");
    std::shared_ptr<RenderCache> cache = impl->env.render_cache;
    registry->AddCallback("hcprp_frontend_render_cache_lookups_total",
                          "Rendered resources looked up for GETs and lists, by whether the cache held them",
                          metrics::Type::kCounter, {"result"}, [cache] {
                            return std::vector<metrics::Sample>{
                                {{"hit"}, static_cast<double>(cache->Hits())},
                                {{"miss"}, static_cast<double>(cache->Misses())}};
                          });
    registry->AddCallback("hcprp_frontend_render_cache_bytes", "Bytes the render cache holds",
                          metrics::Type::kGauge, {}, [cache] {
                            return std::vector<metrics::Sample>{{{}, static_cast<double>(cache->Bytes())}};
                          });
  }
  return std::unique_ptr<Frontend>(new Frontend(std::move(impl)));
}

Frontend::Frontend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Frontend::~Frontend() = default;

namespace {

// The correlation headers every answer carries.
void AddCorrelationHeaders(const Request& request, const RequestContext& ctx,
                           std::string_view client_request_id, Response& res) {
  res.version(request.version());
  res.set(arm::headers::kRequestId, ctx.request_id);
  if (!ctx.correlation_id.empty()) res.set(arm::headers::kCorrelationRequestId, ctx.correlation_id);
  if (SafeToEcho(client_request_id)) {
    auto it = request.find(arm::headers::kReturnClientRequestId);
    if (it != request.end() && EqualsIgnoreCase(it->value(), "true")) {
      res.set(arm::headers::kClientRequestId, client_request_id);
    }
  }
}

std::string_view HeaderOf(const Request& request, std::string_view name) {
  auto it = request.find(name);
  return it == request.end() ? std::string_view() : std::string_view(it->value());
}

}  // namespace

Response TooLargeResponse(const Request& header_only, size_t max_body) {
  RequestContext ctx;
  ctx.req = &header_only;
  ctx.request_id = NewUuidV4();
  if (std::string_view c = HeaderOf(header_only, arm::headers::kCorrelationRequestId); SafeToEcho(c)) {
    ctx.correlation_id = std::string(c);
  }
  Response res = TooLargeReply(max_body);
  AddCorrelationHeaders(header_only, ctx, HeaderOf(header_only, arm::headers::kClientRequestId), res);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

Response UnauthenticatedResponse(std::string_view reason) {
  Response res = ErrorReply(arm::CloudError(
      401, arm::codes::kAuthenticationFailed,
      "The client certificate was not accepted (" + std::string(reason) +
          "): only Azure Resource Manager, authenticated by one of its published certificates, may call."));
  res.set(arm::headers::kRequestId, NewUuidV4());
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

Response OverloadedResponse() {
  Response res = ErrorReply(arm::CloudError(503, arm::codes::kServiceUnavailable,
                                            "The service has too many open connections; retry shortly."));
  res.set(arm::headers::kRequestId, NewUuidV4());
  res.set(arm::headers::kRetryAfter, "1");
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

namespace {

// The series of one label set, cached per thread so that the request path builds no label strings
// and takes no lock once a thread has seen the label set. Keys carry the frontend's instance number:
// series of a destroyed frontend are never looked up again.
struct SeriesKey {
  uint64_t instance;
  const char* route;  // a RouteTemplate() literal (or "unmatched")
  int method;
  int status;
  std::array<char, 24> api_version;
  bool operator==(const SeriesKey&) const = default;
};
struct SeriesKeyHash {
  size_t operator()(const SeriesKey& k) const {
    size_t h = std::hash<uint64_t>{}(k.instance) ^ (std::hash<const void*>{}(k.route) * 31);
    h ^= std::hash<int>{}(k.method * 1000 + k.status) * 131;
    return h ^ std::hash<std::string_view>{}(std::string_view(k.api_version.data()));
  }
};
struct Series {
  metrics::Counter* requests;
  metrics::Histogram* latency;
};

}  // namespace

void Frontend::Impl::Observe(const RequestContext& ctx, bhttp::verb method, int status, double seconds) {
  if (metrics.requests == nullptr) return;
  // Label values come from bounded sets only: the route template, the verb, a supported
  // api-version, the status code.
  std::string_view api_version;
  if (!ctx.api_version.empty()) {
    api_version = api::IsSupportedVersion(ctx.api_version) || ctx.api_version == "2.0"
                      ? std::string_view(ctx.api_version)
                      : std::string_view("unsupported");
  }
  SeriesKey key{instance, ctx.route_template.data(), static_cast<int>(method), status, {}};
  api_version.copy(key.api_version.data(), std::min(api_version.size(), key.api_version.size() - 1));
  thread_local std::unordered_map<SeriesKey, Series, SeriesKeyHash> cache;
  auto it = cache.find(key);
  if (it == cache.end()) {
    std::string_view verb = method == bhttp::verb::unknown ? "other" : bhttp::to_string(method);
    Series series{metrics.requests->With({ctx.route_template, verb, api_version, std::to_string(status)}),
                  metrics.latency->With({ctx.route_template, verb})};
    it = cache.emplace(key, series).first;
  }
  it->second.requests->Inc();
  it->second.latency->Observe(seconds);
  if (status == 413) metrics.too_large->Inc();
  if (status == 415) metrics.media_type->Inc();
}

Response Frontend::Handle(Request&& request) {
  const Env& env = impl_->env;
  const auto started = std::chrono::steady_clock::now();
  if (impl_->metrics.in_flight != nullptr) impl_->metrics.in_flight->Add(1);
  const bool head = request.method() == bhttp::verb::head;
  RequestContext ctx;
  ctx.req = &request;
  ctx.method = head ? bhttp::verb::get : request.method();
  ctx.request_id = NewUuidV4();
  std::string_view correlation = HeaderOf(request, arm::headers::kCorrelationRequestId);
  if (SafeToEcho(correlation)) ctx.correlation_id = std::string(correlation);
  std::string_view client_request_id = HeaderOf(request, arm::headers::kClientRequestId);

  Response res;
  try {
    res = impl_->Dispatch(ctx);
  } catch (const std::exception& e) {
    env.logger.Error("unhandled exception", {{"request_id", ctx.request_id}, {"error", e.what()}});
    res = ErrorReply(CloudError::Internal());
  } catch (...) {
    env.logger.Error("unhandled exception", {{"request_id", ctx.request_id}});
    res = ErrorReply(CloudError::Internal());
  }

  // A 503 (store or Cluster Service unavailable) or 429 tells the client when to retry.
  if (int retry_after = arm::DefaultRetryAfterSeconds(res.result_int());
      retry_after > 0 && res.find(arm::headers::kRetryAfter) == res.end()) {
    res.set(arm::headers::kRetryAfter, std::to_string(retry_after));
  }
  AddCorrelationHeaders(request, ctx, client_request_id, res);
  res.keep_alive(request.keep_alive());
  res.prepare_payload();
  if (head) {
    const size_t length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }

  const auto latency =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  std::string_view target = request.target();
  json::object fields(8);  // the most it gets: no rehash on the way
  fields["method"] = bhttp::to_string(request.method());
  fields["path"] = target.substr(0, std::min<size_t>(target.find('?'), 2048));
  fields["status"] = static_cast<int>(res.result_int());
  fields["latency_ms"] = static_cast<double>(latency.count()) / 1000.0;
  fields["request_id"] = ctx.request_id;
  fields["correlation_id"] = ctx.correlation_id;
  if (SafeToEcho(client_request_id)) fields["client_request_id"] = client_request_id;
  if (res.result_int() >= 400) {
    auto code = res.find(arm::headers::kErrorCode);
    if (code != res.end()) fields["error_code"] = code->value();
  }
  env.logger.Info("access", std::move(fields));
  impl_->Observe(ctx, request.method(), static_cast<int>(res.result_int()),
                 static_cast<double>(latency.count()) / 1e6);
  if (impl_->metrics.in_flight != nullptr) impl_->metrics.in_flight->Add(-1);
  return res;
}

}  // namespace hcprp::frontend
