// The update service's side of the Cluster Service: the Cincinnati graph endpoint, and publishing
// releases and withdrawing edges with their events.
#include <algorithm>

#include "http/url.h"
#include "simulator/service_internal.h"

namespace hcprp::simulator {

using http::StatusCode;

namespace {

// What the public update service accepts in a channel parameter.
bool ValidChannel(std::string_view channel) {
  return !channel.empty() && std::all_of(channel.begin(), channel.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '.';
  });
}

// The update service's error body: {"kind", "value"}.
http::Response GraphError(StatusCode status, std::string_view kind, const std::string& value) {
  return http::JsonResponse(status, ToJson(json::object{{"kind", kind}, {"value", value}}));
}

// Whether the client takes JSON: no Accept header, or one the update service accepts as it is.
bool AcceptsJson(std::string_view accept) {
  return accept.empty() || accept == "application/json" || accept == "application/*" || accept == "*/*" ||
         accept == "*";
}

std::string EdgeHref(const std::string& from_raw, const std::string& to_raw) {
  return "/api/upgrades_info/edges/" + from_raw + "/" + to_raw;
}

}  // namespace

http::Response Service::UpgradeGraph(const http::Request& req, std::string_view query) {
  if (req.method() != http::Verb::get) {
    return GraphError(StatusCode::method_not_allowed, "method_not_allowed",
                      "method " + std::string(req.method_string()) + " is not allowed; use GET");
  }
  if (!AcceptsJson(req[http::beast_http::field::accept])) {
    return GraphError(StatusCode::not_acceptable, "invalid_content_type", "invalid Content-Type requested");
  }
  std::optional<std::string> channel = http::FindQueryParam(query, "channel");
  if (!channel) {
    return GraphError(StatusCode::bad_request, "missing_params",
                      "mandatory client parameters missing: channel");
  }
  if (!ValidChannel(*channel)) {
    return GraphError(
        StatusCode::bad_request, "invalid_params",
        "invalid client parameters: channel '" + *channel + R"(' does not match regex '^[0-9a-z\-\.]+$')");
  }
  return http::JsonResponse(StatusCode::ok, ToJson(CincinnatiGraph(*versions(), *channel)));
}

Status Service::CommitUpdateLocked(Txn& txn, UpdateChange change) {
  if (!change.changed) return Status::Ok();
  txn.update_service = std::move(change.documents);
  HCPRP_RETURN_IF_ERROR(CommitLocked(txn));
  updates_->Apply(std::move(change));
  return Status::Ok();
}

Result<std::vector<std::string>> Service::PublishRelease(const Release& release) {
  MutexLock lock(mu_);
  HCPRP_ASSIGN_OR_RETURN(auto change, updates_->PlanPublish(release));
  std::vector<std::string> ids = change.new_version_ids;
  Txn txn;
  for (const auto& id : ids) {
    AddEventLocked(txn, std::string(kApiPrefix) + "/versions/" + id, "Version", "published",
                   change.catalogue->ToOcm(*change.catalogue->Find(id)));
  }
  HCPRP_RETURN_IF_ERROR(CommitUpdateLocked(txn, std::move(change)));
  if (options_.logger && !ids.empty()) {
    options_.logger->Info("release published", {{"version", release.version}});
  }
  return ids;
}

Status Service::SetEdgeWithdrawn(const std::string& from_raw, const std::string& to_raw, bool withdrawn) {
  MutexLock lock(mu_);
  HCPRP_ASSIGN_OR_RETURN(auto change, updates_->PlanEdge(from_raw, to_raw, withdrawn));
  const std::string href = EdgeHref(from_raw, to_raw);
  Txn txn;
  AddEventLocked(txn, href, "UpgradeEdge", withdrawn ? "withdrawn" : "restored",
                 json::object{{"kind", "UpgradeEdge"},
                              {"href", href},
                              {"from", from_raw},
                              {"to", to_raw},
                              {"withdrawn", withdrawn}});
  return CommitUpdateLocked(txn, std::move(change));
}

}  // namespace hcprp::simulator
