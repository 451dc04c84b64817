// The control API (/control): faults, timing and the update service's releases and edges. Never subject to
// faults. A route table maps a method and a path to its handler; a path known with another method answers 405
// naming the methods it takes.
#include <algorithm>
#include <span>

#include "http/url.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;
using http::Verb;

http::Response Service::ControlJson(StatusCode status, const json::value& body) {
  return http::JsonResponse(status, ToJson(body));
}

// The handlers of the control API. See README.md in this folder.
struct Service::ControlApi {
  using Handler = http::Response (*)(Service&, const http::Request&);
  struct Route {
    Verb method;
    std::string_view path;
    Handler handle;
  };

  static http::Response Dispatch(Service& s, const http::Request& req, std::string_view path);
  // "GET only", "GET or DELETE", "PUT, POST or DELETE": the methods `routes` take at `path`.
  static std::string AllowedMethods(std::span<const Route> routes, std::string_view path);

  static http::Response Health(Service& s, const http::Request& req);
  static http::Response GetFaults(Service& s, const http::Request& req);
  static http::Response ClearFaults(Service& s, const http::Request& req);
  static http::Response AddProvisioningFault(Service& s, const http::Request& req);
  static http::Response ClearProvisioningFaults(Service& s, const http::Request& req);
  static http::Response SetHttpFaults(Service& s, const http::Request& req);
  static http::Response ClearHttpFaults(Service& s, const http::Request& req);
  static http::Response GetTiming(Service& s, const http::Request& req);
  static http::Response SetTiming(Service& s, const http::Request& req);
  static http::Response GetVersions(Service& s, const http::Request& req);
  static http::Response PublishVersion(Service& s, const http::Request& req);
  static http::Response SetEdge(Service& s, const http::Request& req);

  static Result<ProvisioningFault> ParseProvisioningFault(const json::object& body);
  static Result<HttpFaults> ParseHttpFaults(const json::object& body);
  static json::object FaultsJson(Service& s);
  static json::object TimingJson(const Service& s);
  // Re-plans the steps in progress as if their current state began now (after a change of timing).
  static Status ReplanSteps(Service& s);
};

namespace {

http::Response BadRequest(const std::string& message) {
  return http::JsonResponse(StatusCode::bad_request, ToJson(json::object{{"error", message}}));
}

// The request's body as a JSON object ({} when empty).
Result<json::object> BodyObject(const http::Request& req) {
  if (req.body().empty()) return json::object{};
  HCPRP_ASSIGN_OR_RETURN(auto v, ParseJson(req.body()));
  if (!v.is_object()) return Error::InvalidArgument("body must be a JSON object");
  return std::move(v.as_object());
}

}  // namespace

http::Response Service::HandleControl(const http::Request& req, std::string_view path) {
  return ControlApi::Dispatch(*this, req, path);
}

http::Response Service::ControlApi::Dispatch(Service& s, const http::Request& req, std::string_view path) {
  static constexpr Route kRoutes[] = {
      {Verb::get, "/control/health", &Health},
      {Verb::get, "/control/faults", &GetFaults},
      {Verb::delete_, "/control/faults", &ClearFaults},
      {Verb::post, "/control/faults/provisioning", &AddProvisioningFault},
      {Verb::delete_, "/control/faults/provisioning", &ClearProvisioningFaults},
      {Verb::put, "/control/faults/http", &SetHttpFaults},
      {Verb::post, "/control/faults/http", &SetHttpFaults},
      {Verb::delete_, "/control/faults/http", &ClearHttpFaults},
      {Verb::get, "/control/timing", &GetTiming},
      {Verb::put, "/control/timing", &SetTiming},
      {Verb::post, "/control/timing", &SetTiming},
      {Verb::get, "/control/versions", &GetVersions},
      {Verb::post, "/control/versions", &PublishVersion},
      {Verb::post, "/control/versions/edges", &SetEdge},
  };
  bool path_known = false;
  for (const auto& r : kRoutes) {
    if (r.path != path) continue;
    if (r.method == req.method()) return r.handle(s, req);
    path_known = true;
  }
  if (path_known) {
    return ControlJson(StatusCode::method_not_allowed,
                       json::object{{"error", AllowedMethods(kRoutes, path)}});
  }
  return ControlJson(StatusCode::not_found,
                     json::object{{"error", "unknown control path " + std::string(path)}});
}

std::string Service::ControlApi::AllowedMethods(std::span<const Route> routes, std::string_view path) {
  std::vector<std::string_view> methods;
  for (const auto& r : routes) {
    if (r.path == path) methods.push_back(http::beast_http::to_string(r.method));
  }
  if (methods.size() == 1) return std::string(methods[0]) + " only";
  std::string out;
  for (size_t i = 0; i < methods.size(); ++i) {
    if (i > 0) out += i + 1 == methods.size() ? " or " : ", ";
    out += methods[i];
  }
  return out;
}

json::object Service::ControlApi::TimingJson(const Service& s) {
  if (!s.options_.timing) return json::object{{"profile", "custom"}};
  Timing t = s.options_.timing->timing();
  return json::object{{"profile", ProfileName(t.profile)}, {"time_scale", t.time_scale}};
}

json::object Service::ControlApi::FaultsJson(Service& s) {
  MutexLock lock(s.faults_mu_);
  json::array prov;
  for (const auto& f : s.provisioning_faults_) {
    json::array kinds(f.kinds.begin(), f.kinds.end());
    json::array ops(f.operations.begin(), f.operations.end());
    prov.push_back(json::object{{"id", f.id},
                                {"remaining", f.remaining},
                                {"fraction", f.fraction},
                                {"code", f.code},
                                {"message", f.message},
                                {"state", f.state},
                                {"kinds", std::move(kinds)},
                                {"operations", std::move(ops)}});
  }
  const HttpFaults h = s.http_faults_;  // a copy: the lock analysis does not follow a reference to it
  json::array methods(h.methods.begin(), h.methods.end());
  return json::object{{"provisioning", std::move(prov)},
                      {"http", json::object{{"error_count", h.error_count},
                                            {"error_fraction", h.error_fraction},
                                            {"error_after_count", h.error_after_count},
                                            {"error_after_fraction", h.error_after_fraction},
                                            {"status", h.status},
                                            {"delay_fraction", h.delay_fraction},
                                            {"delay_ms", h.delay_ms},
                                            {"hang_fraction", h.hang_fraction},
                                            {"hang_ms", h.hang_ms},
                                            {"path_prefix", h.path_prefix},
                                            {"methods", std::move(methods)}}}};
}

http::Response Service::ControlApi::Health(Service& s, const http::Request& /*req*/) {
  json::object body{{"status", "ok"}};
  for (auto& [k, v] : TimingJson(s)) body[k] = v;
  MutexLock lock(s.mu_);
  body["objects"] = static_cast<int64_t>(s.records_.size());
  body["last_sequence"] = s.last_sequence_;
  body["pending_steps"] = static_cast<int64_t>(s.options_.scheduler->pending());
  return ControlJson(StatusCode::ok, body);
}

http::Response Service::ControlApi::GetFaults(Service& s, const http::Request& /*req*/) {
  return ControlJson(StatusCode::ok, FaultsJson(s));
}

http::Response Service::ControlApi::ClearFaults(Service& s, const http::Request& /*req*/) {
  MutexLock lock(s.faults_mu_);
  s.provisioning_faults_.clear();
  s.http_faults_ = HttpFaults{};
  return http::MakeResponse(StatusCode::no_content);
}

Result<Service::ProvisioningFault> Service::ControlApi::ParseProvisioningFault(const json::object& b) {
  ProvisioningFault f;
  f.remaining = GetInt(b, "count").value_or(-1);
  if (const auto* fr = b.if_contains("fraction"); fr && fr->is_number()) f.fraction = fr->to_number<double>();
  if (f.remaining < 0 && !b.contains("fraction")) f.remaining = 1;
  if (f.fraction < 0 || f.fraction > 1) return Error::InvalidArgument("fraction must be within [0, 1]");
  f.code = std::string(GetString(b, "code").value_or("OCM3999"));
  f.message = std::string(GetString(b, "message").value_or("Injected provisioning failure"));
  f.state = std::string(GetString(b, "state").value_or("error"));
  if (f.state != "error" && f.state != "recoverable_error")
    return Error::InvalidArgument("state must be error or recoverable_error");
  if (const json::array* kinds = GetArray(b, "kinds")) {
    for (const auto& k : *kinds) {
      if (!k.is_string()) return Error::InvalidArgument("kinds must be strings");
      std::string kind(k.as_string());
      if (kind != kCluster && kind != kNodePool && kind != kExternalAuth)
        return Error::InvalidArgument("unknown kind " + kind);
      f.kinds.push_back(std::move(kind));
    }
  }
  if (const json::array* ops = GetArray(b, "operations")) {
    for (const auto& o : *ops) {
      if (!o.is_string() || !ParseOperation(o.as_string()).ok())
        return Error::InvalidArgument("operations: create, update, delete, upgrade");
      f.operations.emplace_back(o.as_string());
    }
  } else {
    f.operations = {"create", "update"};
  }
  return f;
}

http::Response Service::ControlApi::AddProvisioningFault(Service& s, const http::Request& req) {
  auto body = BodyObject(req);
  if (!body.ok()) return BadRequest(body.error().message());
  auto f = ParseProvisioningFault(*body);
  if (!f.ok()) return BadRequest(f.error().message());
  MutexLock lock(s.faults_mu_);
  f->id = s.next_fault_id_++;
  s.provisioning_faults_.push_back(*f);
  return ControlJson(StatusCode::created, json::object{{"id", f->id}});
}

http::Response Service::ControlApi::ClearProvisioningFaults(Service& s, const http::Request& /*req*/) {
  MutexLock lock(s.faults_mu_);
  s.provisioning_faults_.clear();
  return http::MakeResponse(StatusCode::no_content);
}

Result<Service::HttpFaults> Service::ControlApi::ParseHttpFaults(const json::object& b) {
  HttpFaults h;
  auto fraction = [&](std::string_view k, double& out) -> bool {
    if (const auto* v = b.if_contains(k)) {
      if (!v->is_number()) return false;
      out = v->to_number<double>();
      return out >= 0 && out <= 1;
    }
    return true;
  };
  if (!fraction("error_fraction", h.error_fraction) ||
      !fraction("error_after_fraction", h.error_after_fraction) ||
      !fraction("delay_fraction", h.delay_fraction) || !fraction("hang_fraction", h.hang_fraction)) {
    return Error::InvalidArgument("fractions must be numbers within [0, 1]");
  }
  h.error_count = GetInt(b, "error_count").value_or(0);
  h.error_after_count = GetInt(b, "error_after_count").value_or(0);
  h.status = static_cast<int>(GetInt(b, "status").value_or(503));
  if (h.status < 500 || h.status > 599) return Error::InvalidArgument("status must be a 5xx code");
  h.delay_ms = GetInt(b, "delay_ms").value_or(0);
  h.hang_ms = GetInt(b, "hang_ms").value_or(120'000);
  if (h.delay_ms < 0 || h.hang_ms < 0) return Error::InvalidArgument("durations must not be negative");
  if (h.delay_ms > 0 && !b.contains("delay_fraction")) h.delay_fraction = 1.0;
  h.path_prefix = std::string(GetString(b, "path_prefix").value_or(kApiPrefix));
  if (const json::array* ms = GetArray(b, "methods")) {
    for (const auto& m : *ms) {
      if (m.is_string()) h.methods.emplace_back(m.as_string());
    }
  }
  return h;
}

http::Response Service::ControlApi::SetHttpFaults(Service& s, const http::Request& req) {
  auto body = BodyObject(req);
  if (!body.ok()) return BadRequest(body.error().message());
  auto h = ParseHttpFaults(*body);
  if (!h.ok()) return BadRequest(h.error().message());
  MutexLock lock(s.faults_mu_);
  s.http_faults_ = std::move(h).value();
  return http::MakeResponse(StatusCode::no_content);
}

http::Response Service::ControlApi::ClearHttpFaults(Service& s, const http::Request& /*req*/) {
  MutexLock lock(s.faults_mu_);
  s.http_faults_ = HttpFaults{};
  return http::MakeResponse(StatusCode::no_content);
}

http::Response Service::ControlApi::GetTiming(Service& s, const http::Request& /*req*/) {
  return ControlJson(StatusCode::ok, TimingJson(s));
}

http::Response Service::ControlApi::SetTiming(Service& s, const http::Request& req) {
  if (!s.options_.timing) return BadRequest("this simulator's provisioner has no timing profile");
  auto b = BodyObject(req);
  if (!b.ok()) return BadRequest(b.error().message());
  Timing t = s.options_.timing->timing();
  if (auto p = GetString(*b, "profile")) {
    auto parsed = ParseProfile(*p);
    if (!parsed.ok()) return BadRequest(parsed.error().message());
    t.profile = *parsed;
  }
  if (const auto* ts = b->if_contains("time_scale")) {
    if (!ts->is_number() || ts->to_number<double>() < 0)
      return BadRequest("time_scale must be a non-negative number");
    t.time_scale = ts->to_number<double>();
  }
  s.options_.timing->set_timing(t);
  Status st = ReplanSteps(s);
  if (!st.ok())
    return ControlJson(StatusCode::internal_server_error, json::object{{"error", st.error().message()}});
  return ControlJson(StatusCode::ok, TimingJson(s));
}

http::Response Service::ControlApi::GetVersions(Service& s, const http::Request& /*req*/) {
  return ControlJson(StatusCode::ok, s.updates().PublishedJson());
}

http::Response Service::ControlApi::PublishVersion(Service& s, const http::Request& req) {
  auto body = BodyObject(req);
  if (!body.ok()) return BadRequest(body.error().message());
  auto release = Release::FromJson(*body);
  if (!release.ok()) return BadRequest(release.error().message());
  auto ids = s.PublishRelease(*release);
  if (!ids.ok() && ids.error().code() == ErrorCode::kInvalidArgument)
    return BadRequest(ids.error().message());
  if (!ids.ok()) {
    return ControlJson(StatusCode::internal_server_error, json::object{{"error", ids.error().message()}});
  }
  return ControlJson(
      ids->empty() ? StatusCode::ok : StatusCode::created,
      json::object{{"version", release->version}, {"published", json::array(ids->begin(), ids->end())}});
}

http::Response Service::ControlApi::SetEdge(Service& s, const http::Request& req) {
  auto body = BodyObject(req);
  if (!body.ok()) return BadRequest(body.error().message());
  auto from = GetString(*body, "from");
  auto to = GetString(*body, "to");
  if (!from || !to) return BadRequest("from and to must name releases (X.Y.Z)");
  bool withdrawn = true;
  if (const auto* w = body->if_contains("withdrawn")) {
    if (!w->is_bool()) return BadRequest("withdrawn must be true or false");
    withdrawn = w->as_bool();
  }
  Status st = s.SetEdgeWithdrawn(std::string(*from), std::string(*to), withdrawn);
  if (!st.ok() && st.error().code() == ErrorCode::kInvalidArgument) return BadRequest(st.error().message());
  if (!st.ok())
    return ControlJson(StatusCode::internal_server_error, json::object{{"error", st.error().message()}});
  return ControlJson(StatusCode::ok, json::object{{"from", *from}, {"to", *to}, {"withdrawn", withdrawn}});
}

Status Service::ControlApi::ReplanSteps(Service& s) {
  MutexLock lock(s.mu_);
  Txn txn;
  const TimePoint now = s.options_.clock->Now();
  std::vector<std::string> pending;
  for (const auto& [href, rec] : s.records_) {
    if (rec.has_next) pending.push_back(href);
  }
  for (const auto& href : pending) {
    Record& r = s.TouchLocked(txn, href);
    r.state_since = now;
    s.PlanLocked(r);
  }
  return s.CommitLocked(txn);
}

}  // namespace hcprp::simulator
