// The control API (/control): faults and timing. Never subject to faults.
#include <algorithm>

#include "http/url.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

http::Response Service::ControlJson(StatusCode status, const json::value& body) {
  return http::JsonResponse(status, ToJson(body));
}

// ---------------------------------------------------------------------------------------------
// /control: fault injection and timing. See README.md in this folder.

http::Response Service::HandleControl(const http::Request& req, std::string_view path) {
  using http::Verb;
  const auto method = req.method();
  auto bad = [](const std::string& m) {
    return ControlJson(StatusCode::bad_request, json::object{{"error", m}});
  };
  auto body_object = [&]() -> Result<json::object> {
    if (req.body().empty()) return json::object{};
    HCPRP_ASSIGN_OR_RETURN(auto v, ParseJson(req.body()));
    if (!v.is_object()) return Error::InvalidArgument("body must be a JSON object");
    return std::move(v.as_object());
  };
  auto faults_json = [&]() {
    MutexLock lock(faults_mu_);
    json::array prov;
    for (const auto& f : provisioning_faults_) {
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
    const HttpFaults& h = http_faults_;
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
  };
  auto timing_json = [&]() {
    if (!options_.timing) return json::object{{"profile", "custom"}};
    Timing t = options_.timing->timing();
    return json::object{{"profile", ProfileName(t.profile)}, {"time_scale", t.time_scale}};
  };

  if (path == "/control/health") {
    if (method != Verb::get)
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET only"}});
    json::object body{{"status", "ok"}};
    for (auto& [k, v] : timing_json()) body[k] = v;
    MutexLock lock(mu_);
    body["objects"] = static_cast<int64_t>(records_.size());
    body["last_sequence"] = last_sequence_;
    body["pending_steps"] = static_cast<int64_t>(options_.scheduler->pending());
    return ControlJson(StatusCode::ok, body);
  }
  if (path == "/control/faults") {
    if (method == Verb::get) return ControlJson(StatusCode::ok, faults_json());
    if (method == Verb::delete_) {
      MutexLock lock(faults_mu_);
      provisioning_faults_.clear();
      http_faults_ = HttpFaults{};
      return http::MakeResponse(StatusCode::no_content);
    }
    return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET or DELETE"}});
  }
  if (path == "/control/faults/provisioning") {
    if (method == Verb::delete_) {
      MutexLock lock(faults_mu_);
      provisioning_faults_.clear();
      return http::MakeResponse(StatusCode::no_content);
    }
    if (method != Verb::post)
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "POST or DELETE"}});
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    ProvisioningFault f;
    f.remaining = GetInt(*b, "count").value_or(-1);
    if (auto* fr = b->if_contains("fraction"); fr && fr->is_number()) f.fraction = fr->to_number<double>();
    if (f.remaining < 0 && !b->contains("fraction")) f.remaining = 1;
    if (f.fraction < 0 || f.fraction > 1) return bad("fraction must be within [0, 1]");
    f.code = std::string(GetString(*b, "code").value_or("OCM3999"));
    f.message = std::string(GetString(*b, "message").value_or("Injected provisioning failure"));
    f.state = std::string(GetString(*b, "state").value_or("error"));
    if (f.state != "error" && f.state != "recoverable_error")
      return bad("state must be error or recoverable_error");
    if (const json::array* kinds = GetArray(*b, "kinds")) {
      for (const auto& k : *kinds) {
        if (!k.is_string()) return bad("kinds must be strings");
        std::string s(k.as_string());
        if (s != kCluster && s != kNodePool && s != kExternalAuth) return bad("unknown kind " + s);
        f.kinds.push_back(std::move(s));
      }
    }
    if (const json::array* ops = GetArray(*b, "operations")) {
      for (const auto& o : *ops) {
        if (!o.is_string() || !ParseOperation(o.as_string()).ok())
          return bad("operations: create, update, delete");
        f.operations.emplace_back(o.as_string());
      }
    } else {
      f.operations = {"create", "update"};
    }
    MutexLock lock(faults_mu_);
    f.id = next_fault_id_++;
    provisioning_faults_.push_back(f);
    return ControlJson(StatusCode::created, json::object{{"id", f.id}});
  }
  if (path == "/control/faults/http") {
    if (method == Verb::delete_) {
      MutexLock lock(faults_mu_);
      http_faults_ = HttpFaults{};
      return http::MakeResponse(StatusCode::no_content);
    }
    if (method != Verb::post && method != Verb::put) {
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "PUT, POST or DELETE"}});
    }
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    HttpFaults h;
    auto fraction = [&](std::string_view k, double& out) -> bool {
      if (auto* v = b->if_contains(k)) {
        if (!v->is_number()) return false;
        out = v->to_number<double>();
        return out >= 0 && out <= 1;
      }
      return true;
    };
    if (!fraction("error_fraction", h.error_fraction) ||
        !fraction("error_after_fraction", h.error_after_fraction) ||
        !fraction("delay_fraction", h.delay_fraction) || !fraction("hang_fraction", h.hang_fraction)) {
      return bad("fractions must be numbers within [0, 1]");
    }
    h.error_count = GetInt(*b, "error_count").value_or(0);
    h.error_after_count = GetInt(*b, "error_after_count").value_or(0);
    h.status = static_cast<int>(GetInt(*b, "status").value_or(503));
    if (h.status < 500 || h.status > 599) return bad("status must be a 5xx code");
    h.delay_ms = GetInt(*b, "delay_ms").value_or(0);
    h.hang_ms = GetInt(*b, "hang_ms").value_or(120'000);
    if (h.delay_ms < 0 || h.hang_ms < 0) return bad("durations must not be negative");
    if (h.delay_ms > 0 && !b->contains("delay_fraction")) h.delay_fraction = 1.0;
    h.path_prefix = std::string(GetString(*b, "path_prefix").value_or(kApiPrefix));
    if (const json::array* ms = GetArray(*b, "methods")) {
      for (const auto& m : *ms) {
        if (m.is_string()) h.methods.emplace_back(m.as_string());
      }
    }
    MutexLock lock(faults_mu_);
    http_faults_ = h;
    return http::MakeResponse(StatusCode::no_content);
  }
  if (path == "/control/timing") {
    if (method == Verb::get) return ControlJson(StatusCode::ok, timing_json());
    if (method != Verb::put && method != Verb::post) {
      return ControlJson(StatusCode::method_not_allowed, json::object{{"error", "GET or PUT"}});
    }
    if (!options_.timing) return bad("this simulator's provisioner has no timing profile");
    auto b = body_object();
    if (!b.ok()) return bad(b.error().message());
    Timing t = options_.timing->timing();
    if (auto p = GetString(*b, "profile")) {
      auto parsed = ParseProfile(*p);
      if (!parsed.ok()) return bad(parsed.error().message());
      t.profile = *parsed;
    }
    if (auto* ts = b->if_contains("time_scale")) {
      if (!ts->is_number() || ts->to_number<double>() < 0)
        return bad("time_scale must be a non-negative number");
      t.time_scale = ts->to_number<double>();
    }
    options_.timing->set_timing(t);
    // Re-plan the steps in progress as if their current state began now.
    MutexLock lock(mu_);
    Txn txn;
    const TimePoint now = options_.clock->Now();
    std::vector<std::string> pending;
    for (const auto& [href, rec] : records_) {
      if (rec.has_next) pending.push_back(href);
    }
    for (const auto& href : pending) {
      Record& r = TouchLocked(txn, href);
      r.state_since = now;
      PlanLocked(r);
    }
    Status st = CommitLocked(txn);
    if (!st.ok())
      return ControlJson(StatusCode::internal_server_error, json::object{{"error", st.error().message()}});
    return ControlJson(StatusCode::ok, timing_json());
  }
  return ControlJson(StatusCode::not_found,
                     json::object{{"error", "unknown control path " + std::string(path)}});
}

}  // namespace hcprp::simulator
