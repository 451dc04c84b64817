#include "clusterservice/http_client.h"

#include <limits>

#include "core/uuid.h"
#include "http/url.h"

namespace hcprp::clusterservice {

Error ErrorFromResponse(const http::Response& res) {
  const unsigned status = res.result_int();
  std::string msg = "HTTP " + std::to_string(status);
  auto parsed = ParseJson(res.body());
  if (parsed.ok() && parsed->is_object()) {
    const auto& o = parsed->as_object();
    if (auto code = GetString(o, "code")) msg += " " + std::string(*code);
    if (auto reason = GetString(o, "reason")) msg += ": " + std::string(*reason);
  } else if (!res.body().empty()) {
    msg += ": " + res.body().substr(0, 200);
  }
  switch (status) {
    case 400:
    case 422:
      return Error::InvalidArgument(msg);
    case 404:
      return Error::NotFound(msg);
    case 409:
      return Error::Conflict(msg);
    case 410:
    case 412:
      return Error::PreconditionFailed(msg);
    case 429:
      return Error::Throttled(msg);
    default:
      if (status >= 500) return Error::Unavailable(msg);
      return Error::Internal(msg);
  }
}

namespace {

Result<json::object> ParseObject(const http::Response& res) {
  if (res.body().empty()) return json::object{};
  auto v = ParseJson(res.body());
  if (!v.ok()) return Error::Internal("Cluster Service answered invalid JSON: " + v.error().message());
  if (!v->is_object()) return Error::Internal("Cluster Service answered JSON that is not an object");
  return std::move(v->as_object());
}

}  // namespace

Result<std::unique_ptr<HttpClient>> HttpClient::Create(HttpClientOptions options) {
  HCPRP_ASSIGN_OR_RETURN(auto url, http::ParseUrl(options.base_url));
  // https:// needs the TLS context (CA, client certificate) in options.http.tls; http:// must not have one.
  if (url.scheme != (options.http.tls ? "https" : "http")) {
    return Error::InvalidArgument(
        std::string("Cluster Service URL must be ") +
        (options.http.tls ? "https://" : "http:// (or https:// with a TLS context)") + ": " +
        options.base_url);
  }
  std::string prefix(http::SplitTarget(url.target).path);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(options), url.endpoint, std::move(prefix)));
}

HttpClient::HttpClient(HttpClientOptions options, http::Endpoint endpoint, std::string path_prefix)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      path_prefix_(std::move(path_prefix)),
      http_(options_.http) {}

Result<http::Response> HttpClient::Call(http::Verb verb, std::string target, const json::object* body,
                                        std::string_view idempotency_key, bool retry,
                                        std::chrono::milliseconds timeout) {
  http::Request req = http::MakeRequest(verb, path_prefix_ + target, body ? ToJson(*body) : "");
  req.set(http::Field::accept, "application/json");
  if (!idempotency_key.empty()) req.set("X-Idempotency-Key", idempotency_key);
  http::RetryPolicy policy = options_.retry;
  if (!retry) policy.max_attempts = 1;
  policy.retry_non_idempotent = retry;
  auto res = http::SendWithRetry(http_, endpoint_, req, timeout, policy);
  if (!res.ok()) {
    return Error(res.error().code(), "Cluster Service " + std::string(req.method_string()) + " " +
                                         std::string(req.target()) + ": " + res.error().message());
  }
  if (res->result_int() >= 300) return ErrorFromResponse(*res);
  return res;
}

Result<json::object> HttpClient::Create(std::string_view collection_href, const json::object& body,
                                        std::string_view idempotency_key) {
  HCPRP_ASSIGN_OR_RETURN(auto res,
                         Call(http::Verb::post, std::string(collection_href), &body, idempotency_key,
                              /*retry=*/!idempotency_key.empty(), options_.timeout));
  return ParseObject(res);
}

Result<json::object> HttpClient::Get(std::string_view href) {
  HCPRP_ASSIGN_OR_RETURN(auto res,
                         Call(http::Verb::get, std::string(href), nullptr, "", true, options_.timeout));
  return ParseObject(res);
}

Result<json::object> HttpClient::GetStatus(std::string_view href) {
  HCPRP_ASSIGN_OR_RETURN(
      auto res, Call(http::Verb::get, std::string(href) + "/status", nullptr, "", true, options_.timeout));
  HCPRP_ASSIGN_OR_RETURN(auto obj, ParseObject(res));
  // The real service nests the node pool state ({"state": {"node_pool_state_value": ...}}): flatten it.
  if (auto* st = GetObject(obj, "state")) {
    auto v = GetString(*st, "node_pool_state_value");
    obj["state"] = std::string(v.value_or(""));
  }
  return obj;
}

Result<json::object> HttpClient::Update(std::string_view href, const json::object& patch) {
  HCPRP_ASSIGN_OR_RETURN(auto res,
                         Call(http::Verb::patch, std::string(href), &patch, "", true, options_.timeout));
  return ParseObject(res);
}

Status HttpClient::Delete(std::string_view href) {
  HCPRP_RETURN_IF_ERROR(Call(http::Verb::delete_, std::string(href), nullptr, "", true, options_.timeout));
  return Status::Ok();
}

Result<json::object> HttpClient::Action(std::string_view href, std::string_view action,
                                        const json::object& body) {
  HCPRP_ASSIGN_OR_RETURN(auto res, Call(http::Verb::post, std::string(href) + "/" + std::string(action),
                                        &body, "", true, options_.timeout));
  return ParseObject(res);
}

Result<json::array> HttpClient::List(std::string_view collection_href, std::string_view search) {
  json::array items;
  for (int64_t page = 1;; ++page) {
    std::string target = std::string(collection_href) + "?page=" + std::to_string(page) +
                         "&size=" + std::to_string(options_.page_size);
    if (!search.empty()) target += "&search=" + http::EncodeQueryComponent(search);
    HCPRP_ASSIGN_OR_RETURN(auto res, Call(http::Verb::get, target, nullptr, "", true, options_.timeout));
    HCPRP_ASSIGN_OR_RETURN(auto obj, ParseObject(res));
    const json::array* page_items = GetArray(obj, "items");
    size_t n = page_items ? page_items->size() : 0;
    if (page_items) {
      for (const auto& it : *page_items) items.push_back(it);
    }
    auto total = GetInt(obj, "total");
    if (n == 0 || (total && static_cast<int64_t>(items.size()) >= *total) ||
        (!total && n < options_.page_size)) {
      break;
    }
  }
  return items;
}

Result<EventPage> HttpClient::WatchEvents(uint64_t after, std::chrono::milliseconds timeout) {
  std::string target = "/api/aro_hcp/v1alpha1/events?after=" +
                       (after == kLatestEvents ? std::string("latest") : std::to_string(after)) +
                       "&timeout=" + std::to_string(timeout.count()) +
                       "&limit=" + std::to_string(options_.event_page_size);
  auto res = Call(http::Verb::get, target, nullptr, "", true, timeout + options_.watch_margin);
  if (!res.ok()) {
    // A service without an event stream: the caller falls back to polling.
    if (res.error().IsNotFound()) return Error::Unavailable("Cluster Service has no event stream");
    return res.error();
  }
  HCPRP_ASSIGN_OR_RETURN(auto obj, ParseObject(*res));
  return ParseEventPage(obj);
}

}  // namespace hcprp::clusterservice
