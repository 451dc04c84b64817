// Pure mapping from what the Cluster Service reports to the next status of an operation (the one
// mapping of Cluster Service states to ARM states; docs/architecture.md, "Inside the backend"). No I/O;
// thread-safe (stateless).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "arm/documents.h"
#include "clusterservice/event.h"
#include "core/json.h"

namespace hcprp::backend {

using Request = arm::OperationRequest;
using arm::OperationError;

// What kind of Cluster Service object an internal ID (href) names, from its path.
enum class ObjectKind { kCluster, kNodePool, kExternalAuth, kCredential };
ObjectKind KindOfHref(std::string_view href);

// One observation of the object an operation acts on.
//
// Credential operations use synthetic states computed by the backend:
//   RequestCredential: the credential object's "status" ("issued" ends Succeeded; "failed",
//                      "revoked" and "expired" end Failed; anything else is still in progress).
//   RevokeCredentials: kCredentialsRevoked when no credential of the cluster is awaiting or in
//                      revocation, kCredentialsRevoking otherwise.
struct Observation {
  bool gone = false;          // 404 from the Cluster Service, or a "deleted" event
  std::string state;          // Cluster Service state when !gone
  std::string error_code;     // provision_error_code, when reported
  std::string error_message;  // provision_error_message, when reported
  // The newest entry of the version history is "Partial": an upgrade to a new version was accepted and
  // rolls out.
  bool upgrading = false;
};

// An observation from a Cluster Service status.
Observation ObservationFrom(const clusterservice::CsStatus& status);

inline constexpr std::string_view kCredentialsRevoked = "credentials_revoked";
inline constexpr std::string_view kCredentialsRevoking = "credentials_revoking";

struct Transition {
  std::string status;                   // the new operation status (arm::kState*)
  std::optional<OperationError> error;  // set for Failed
};

Transition To(std::string_view status);
Transition FailedWith(std::string code, std::string message);

// The status the operation moves to, or nullopt for "no change". The caller still compares with
// the current status to skip writes that change nothing.
std::optional<Transition> Decide(Request request, ObjectKind kind, const Observation& observation);

}  // namespace hcprp::backend
