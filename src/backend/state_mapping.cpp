#include "backend/state_mapping.h"

using hcprp::arm::kStateDeleting;
using hcprp::arm::kStateFailed;
using hcprp::arm::kStateProvisioning;
using hcprp::arm::kStateSucceeded;
using hcprp::arm::kStateUpdating;

namespace hcprp::backend {

namespace {

constexpr std::string_view kInternalServerError = "InternalServerError";

Transition Failed(const Observation& o, std::string_view fallback_message) {
  return FailedWith(o.error_code.empty() ? std::string(kInternalServerError) : o.error_code,
                    o.error_message.empty() ? std::string(fallback_message) : o.error_message);
}

// Cluster: validating/pending no change; installing Provisioning; ready Succeeded; error Failed
// (code = provision_error_code or InternalServerError); updating Updating; uninstalling Deleting.
std::optional<Transition> DecideCluster(Request request, const Observation& o) {
  const std::string& s = o.state;
  if (s == "installing") return To(kStateProvisioning);
  if (s == "ready") return To(kStateSucceeded);
  if (s == "error") return Failed(o, "The cluster failed to provision");
  if (s == "updating") return To(kStateUpdating);
  if (s == "uninstalling") return To(kStateDeleting);
  (void)request;
  return std::nullopt;  // validating, pending, unknown states
}

// Node pool (and external auth): the pending states no change; installing Provisioning; ready
// Succeeded; updating Updating; uninstalling Deleting; recoverable_error and error Failed with
// InternalServerError and the Cluster Service message.
std::optional<Transition> DecideNodePool(const Observation& o) {
  const std::string& s = o.state;
  if (s == "installing") return To(kStateProvisioning);
  if (s == "ready") return To(kStateSucceeded);
  if (s == "updating") return To(kStateUpdating);
  if (s == "uninstalling") return To(kStateDeleting);
  if (s == "recoverable_error" || s == "error") {
    Observation plain = o;
    plain.error_code.clear();  // node pools always report InternalServerError
    return Failed(plain, "The node pool failed to provision");
  }
  return std::nullopt;  // validating, pending, validating_update, pending_update, unknown
}

}  // namespace

Transition To(std::string_view status) { return Transition{std::string(status), std::nullopt}; }

Transition FailedWith(std::string code, std::string message) {
  OperationError e;
  e.code = std::move(code);
  e.message = std::move(message);
  return Transition{std::string(kStateFailed), std::move(e)};
}

ObjectKind KindOfHref(std::string_view href) {
  if (href.find("/break_glass_credentials/") != std::string_view::npos) return ObjectKind::kCredential;
  if (href.find("/node_pools/") != std::string_view::npos) return ObjectKind::kNodePool;
  if (href.find("/external_auth_configs/") != std::string_view::npos) return ObjectKind::kExternalAuth;
  return ObjectKind::kCluster;
}

std::optional<Transition> Decide(Request request, ObjectKind kind, const Observation& o) {
  switch (request) {
    case Request::kRequestCredential:
      if (o.gone) {
        return FailedWith(std::string(kInternalServerError), "The credential no longer exists");
      }
      if (o.state == "issued") return To(kStateSucceeded);
      if (o.state == "failed" || o.state == "revoked" || o.state == "expired") {
        return Failed(o, "The credential could not be issued (state " + o.state + ")");
      }
      return std::nullopt;
    case Request::kRevokeCredentials:
      // A cluster that is gone has no credentials left to revoke.
      if (o.gone || o.state == kCredentialsRevoked) return To(kStateSucceeded);
      return std::nullopt;
    case Request::kDelete:
      // During a delete only the deletion's own progress counts: "ready" and earlier states are
      // what the object was before the delete reached the Cluster Service.
      if (o.gone) return To(kStateSucceeded);
      if (o.state == "uninstalling") return To(kStateDeleting);
      if (o.state == "error") {
        Observation e = o;
        if (kind != ObjectKind::kCluster) e.error_code.clear();
        return Failed(e, "The deletion failed");
      }
      return std::nullopt;
    case Request::kCreate:
    case Request::kUpdate:
      // An update that changes the version ends once the Cluster Service accepted the new version and
      // its rollout began, as the real service ends it, not when the rollout finishes.
      if (request == Request::kUpdate && o.upgrading && !o.gone && o.state != "error" &&
          o.state != "recoverable_error") {
        return To(kStateSucceeded);
      }
      if (o.gone) {
        return FailedWith(std::string(kInternalServerError),
                          "The resource no longer exists in the Cluster Service");
      }
      if (kind == ObjectKind::kCluster) return DecideCluster(request, o);
      return DecideNodePool(o);
  }
  return std::nullopt;
}

Observation ObservationFrom(const clusterservice::CsStatus& status) {
  Observation o;
  o.state = status.state;
  o.error_code = status.provision_error_code;
  o.error_message = status.provision_error_message;
  if (status.version_history && !status.version_history->empty()) {
    const json::object* newest = status.version_history->front().if_object();
    o.upgrading = newest != nullptr && GetString(*newest, "state").value_or("") == "Partial";
  }
  return o;
}

}  // namespace hcprp::backend
