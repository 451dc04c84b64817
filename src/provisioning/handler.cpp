#include "provisioning/handler.h"

#include "http/url.h"
#include "simulator/service.h"

namespace hcprp::provisioning {

namespace {

using http::StatusCode;

http::Response Json(StatusCode status, const json::value& body) {
  return http::JsonResponse(status, ToJson(body));
}

http::Response Problem(StatusCode status, std::string_view code, const std::string& message) {
  return Json(status, json::object{{"code", code}, {"message", message}});
}

Result<json::object> BodyObject(const http::Request& req) {
  auto parsed = ParseJson(req.body().empty() ? std::string_view("{}") : std::string_view(req.body()));
  if (!parsed.ok()) return Error::InvalidArgument("invalid JSON body: " + parsed.error().message());
  if (!parsed->is_object()) return Error::InvalidArgument("the body must be a JSON object");
  return std::move(parsed->as_object());
}

}  // namespace

std::optional<http::Response> AzureHandler::Handle(const http::Request& req) const {
  const http::Target target = http::SplitTarget(req.target());
  const std::string path(target.path);
  const http::Verb method = req.method();

  const std::string clusters = std::string(simulator::kApiPrefix) + "/clusters/";
  const std::string suffix = "/azure_resources";
  if (path.rfind(clusters, 0) == 0 && path.size() > clusters.size() + suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    const std::string id = path.substr(clusters.size(), path.size() - clusters.size() - suffix.size());
    if (id.find('/') != std::string::npos) return std::nullopt;
    if (method != http::Verb::get)
      return Problem(StatusCode::method_not_allowed, "MethodNotAllowed", "use GET");
    auto view = engine_->ClusterView(clusters + id);
    if (!view.ok()) return Problem(StatusCode::not_found, "NotFound", view.error().message());
    const std::string mrg(GetString(*view, "managed_resource_group").value_or(""));
    json::array in_group;
    for (auto& r : azure_->List(mrg)) {
      const std::string rid(GetString(r.as_object(), "id").value_or(""));
      if (rid.size() == mrg.size() || (rid.size() > mrg.size() && rid[mrg.size()] == '/'))
        in_group.push_back(r);
    }
    (*view)["azure_resources"] = std::move(in_group);
    return Json(StatusCode::ok, *view);
  }

  const std::string control = "/control/azure/";
  if (path.rfind(control, 0) != 0) return std::nullopt;
  const std::string rest = path.substr(control.size());

  if (rest == "resources" && method == http::Verb::get) {
    const std::string prefix = http::FindQueryParam(target.query, "prefix").value_or("");
    return Json(StatusCode::ok, json::object{{"items", azure_->List(prefix)}});
  }
  if (rest == "metrics" && method == http::Verb::get) {
    json::object m = engine_->metrics().ToJson();
    m["resources"] = azure_->resource_count();
    m["operations_in_flight"] = azure_->operations_in_flight();
    m["machines"] = engine_->machine_count();
    json::array calls;
    for (const auto& c : azure_->CallCounts()) {
      calls.push_back(json::object{
          {"service", ShortName(c.type)}, {"call", c.call}, {"outcome", c.outcome}, {"count", c.count}});
    }
    m["calls_by_service"] = std::move(calls);
    return Json(StatusCode::ok, m);
  }
  if ((rest == "identities/delete" || rest == "identities/permissions") && method == http::Verb::post) {
    auto body = BodyObject(req);
    if (!body.ok()) return Problem(StatusCode::bad_request, "InvalidRequestContent", body.error().message());
    const std::string id(GetString(*body, "resource_id").value_or(""));
    if (id.empty())
      return Problem(StatusCode::bad_request, "InvalidRequestContent", "resource_id is required");
    Status st = rest == "identities/delete"
                    ? azure_->DeleteIdentity(id)
                    : azure_->SetIdentityPermissions(id, GetBool(*body, "granted").value_or(false));
    if (!st.ok()) return Problem(StatusCode::not_found, "NotFound", st.error().message());
    (void)azure_->Flush();
    return Json(StatusCode::ok, json::object{{"resource_id", id}});
  }
  if (rest == "faults") {
    if (method == http::Verb::get) return Json(StatusCode::ok, json::object{{"items", azure_->Faults()}});
    if (method == http::Verb::delete_) {
      azure_->ClearFaults();
      return http::MakeResponse(StatusCode::no_content);
    }
    if (method == http::Verb::post) {
      auto body = BodyObject(req);
      if (!body.ok())
        return Problem(StatusCode::bad_request, "InvalidRequestContent", body.error().message());
      AzureFault f;
      if (auto t = GetString(*body, "resource_type"); t && *t != "*") {
        auto type = ParseShortName(*t);
        if (!type.ok())
          return Problem(StatusCode::bad_request, "InvalidRequestContent", type.error().message());
        f.type = *type;
      }
      f.operation = std::string(GetString(*body, "operation").value_or("create"));
      f.kind = std::string(GetString(*body, "kind").value_or("fail"));
      if ((f.operation != "create" && f.operation != "delete") ||
          (f.kind != "fail" && f.kind != "throttle")) {
        return Problem(StatusCode::bad_request, "InvalidRequestContent",
                       "operation must be create or delete, kind fail or throttle");
      }
      if (auto fr = body->find("fraction"); fr != body->end() && fr->value().is_number()) {
        f.fraction = fr->value().to_number<double>();
        f.remaining = -1;
      }
      if (auto n = GetInt(*body, "count")) f.remaining = *n;
      if (f.kind == "throttle") {
        f.code = "TooManyRequests";
        f.message = "The request is being throttled.";
      }
      if (auto c = GetString(*body, "code")) f.code = std::string(*c);
      if (auto m = GetString(*body, "message")) f.message = std::string(*m);
      if (auto s = GetInt(*body, "retry_after_seconds")) f.retry_after = std::chrono::seconds(*s);
      return Json(StatusCode::created, json::object{{"id", azure_->AddFault(f)}});
    }
  }
  return Problem(StatusCode::not_found, "NotFound", "no such control path: " + path);
}

}  // namespace hcprp::provisioning
