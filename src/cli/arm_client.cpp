#include "cli/arm_client.h"

#include <thread>

#include "core/uuid.h"

namespace hcprp::cli {

std::string ArmResponse::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

bool IsTerminalStatus(std::string_view status) {
  return EqualsIgnoreCase(status, "Succeeded") || EqualsIgnoreCase(status, "Failed") ||
         EqualsIgnoreCase(status, "Canceled");
}

namespace {
http::ClientOptions HttpOptions(const ArmClientOptions& o) {
  http::ClientOptions h;
  h.tls = o.tls;
  return h;
}
}  // namespace

ArmClient::ArmClient(ArmClientOptions options) : options_(std::move(options)), http_(HttpOptions(options_)) {}

Result<ArmResponse> ArmClient::Send(http::Request req, const http::Url& url) {
  req.set(http::Field::accept, "application/json");
  req.set("x-ms-client-request-id", NewUuidV4());
  req.set("x-ms-correlation-request-id", NewUuidV4());
  req.set("x-ms-return-client-request-id", "true");
  if (!options_.tenant_id.empty()) req.set("x-ms-home-tenant-id", options_.tenant_id);
  if (!options_.client_object_id.empty()) req.set("x-ms-client-object-id", options_.client_object_id);
  req.set(http::Field::referer, url.scheme + "://" + url.endpoint.ToString() + url.target);
  if ((url.scheme == "https") != (options_.tls != nullptr)) {
    return Error::InvalidArgument(
        url.scheme == "https" ? "an https endpoint needs the CA and client certificate (--data-dir, or "
                                "--ca, --cert and --key)"
                              : "the endpoint is http:// but TLS files were given");
  }
  auto res = http_.Send(url.endpoint, std::move(req), options_.request_timeout);
  if (!res.ok()) {
    return Error(res.error().code(),
                 "cannot reach " + url.endpoint.ToString() + ": " + res.error().message());
  }
  ArmResponse out;
  out.status = static_cast<int>(res->result_int());
  for (const auto& f : *res) out.headers[ToLower(std::string(f.name_string()))] = std::string(f.value());
  if (!res->body().empty()) {
    auto parsed = ParseJson(res->body());
    out.body = parsed.ok() ? std::move(parsed).value() : json::value(res->body());
  }
  return out;
}

Result<ArmResponse> ArmClient::Call(http::Verb method, const std::string& path, const json::value* body,
                                    const std::string& api_version) {
  std::string target = path + (path.find('?') == std::string::npos ? "?" : "&") +
                       "api-version=" + (api_version.empty() ? options_.api_version : api_version);
  HCPRP_ASSIGN_OR_RETURN(auto url, http::ParseUrl(options_.endpoint + target));
  auto req = http::MakeRequest(method, url.target, body ? json::serialize(*body) : "");
  return Send(std::move(req), url);
}

Result<ArmResponse> ArmClient::GetUrl(const std::string& url_text) {
  HCPRP_ASSIGN_OR_RETURN(auto url, http::ParseUrl(url_text));
  return Send(http::MakeRequest(http::Verb::get, url.target, ""), url);
}

namespace {

std::chrono::milliseconds PollDelay(const ArmResponse& r, std::chrono::milliseconds cap) {
  std::chrono::milliseconds d{10'000};
  auto ra = r.Header("retry-after");
  if (!ra.empty()) {
    try {
      d = std::chrono::seconds(std::stoll(ra));
    } catch (...) {
    }
  }
  if (cap.count() > 0 && d > cap) d = cap;
  if (d.count() < 100) d = std::chrono::milliseconds(100);
  return d;
}

std::string StatusOf(const json::value& body) {
  if (const auto* o = body.if_object()) {
    if (auto s = GetString(*o, "status")) return std::string(*s);
    if (const auto* p = GetObject(*o, "properties")) {
      if (auto s = GetString(*p, "provisioningState")) return std::string(*s);
    }
  }
  return "";
}

}  // namespace

Result<ArmResponse> ArmClient::Wait(const ArmResponse& initial,
                                    const std::function<void(const Progress&)>& on_progress) {
  const auto start = std::chrono::steady_clock::now();
  std::string async_url = initial.Header("azure-asyncoperation");
  std::string location = initial.Header("location");
  if (async_url.empty() && location.empty()) return initial;
  ArmResponse last = initial;
  std::string status = StatusOf(initial.body);
  if (status.empty()) status = "Accepted";
  while (true) {
    if (on_progress) on_progress({status, std::chrono::steady_clock::now() - start});
    if (std::chrono::steady_clock::now() - start > options_.wait_timeout) {
      return Error::Timeout("operation still " + status + " after the wait timeout");
    }
    std::this_thread::sleep_for(PollDelay(last, options_.max_poll_interval));
    HCPRP_ASSIGN_OR_RETURN(auto r, GetUrl(async_url.empty() ? location : async_url));
    if (r.status >= 400 && r.status != 404) return Error::Internal(json::serialize(r.body));
    if (async_url.empty()) {
      // Location polling: 202 while running, anything else is the result.
      if (r.status == 202) {
        last = r;
        continue;
      }
      return r;
    }
    if (r.status == 404) return Error::NotFound("the operation status is gone (404)");
    status = StatusOf(r.body);
    last = r;
    if (!IsTerminalStatus(status)) continue;
    if (on_progress) on_progress({status, std::chrono::steady_clock::now() - start});
    if (!EqualsIgnoreCase(status, "Succeeded")) {
      json::object err;
      if (const auto* o = r.body.if_object()) {
        if (auto it = o->find("error"); it != o->end()) err["error"] = it->value();
      }
      err["status"] = status;
      return Error(EqualsIgnoreCase(status, "Canceled") ? ErrorCode::kCanceled : ErrorCode::kInternal,
                   json::serialize(err));
    }
    if (!location.empty()) {
      auto final_res = GetUrl(location);
      if (final_res.ok()) return final_res;
    }
    return r;
  }
}

}  // namespace hcprp::cli
