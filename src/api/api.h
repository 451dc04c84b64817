// API versions and the internal resource model.
//
// Five api-versions are served (api_version.h lists them with their traits): 2024-06-10-preview,
// 2025-12-23-preview, 2026-06-30-preview, 2026-09-01-preview and 2026-10-01. The internal model is
// one canonical JSON shape per resource kind: the property tree of the newest stable api-version
// (2026-10-01). Every served api-version converts its wire bodies to and from it, so a resource
// created with one version reads back with any other.
//
// Validation is driven by the published OpenAPI documents of each version (api-spec/, compiled into
// the library; schema.h has the keyword list and the decisions on enums and unknown properties),
// followed by semantic rules (semantic.h lists them). Every problem of a body is reported, each with
// a JSON path as `target`.
//
// Version differences (conversion.h has the details):
// - Reading with a version drops what it does not declare (2024-06-10-preview: ingress,
//   imageDigestMirrors, status, cryptoRestrictions, platform.vnetIntegrationSubnetId, ...; up to
//   2026-09-01-preview: status.activeVersions, platform.containerRegistry, kms.keyVaultType) and
//   renames what it spells differently (KMS vaultName, the external auth's single `condition`).
// - A resource created with an older version reads with a newer one with the newer defaults applied.
// - A PUT or PATCH through any version keeps the fields of the existing resource that the version
//   cannot express; create-only fields are create-only as the version of the request says.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/api_version.h"
#include "core/json.h"
#include "core/result.h"

namespace hcprp::api {

enum class Kind { kCluster, kNodePool, kExternalAuth };

// The api-version of the canonical model.
inline constexpr std::string_view kStableVersion = "2026-10-01";

// FieldError codes (ARM CloudError codes).
inline constexpr std::string_view kInvalidRequestContent =
    "InvalidRequestContent";                                               // shape: type, unknown, missing
inline constexpr std::string_view kInvalidParameter = "InvalidParameter";  // a value breaks a rule
inline constexpr std::string_view kPropertyChangeNotAllowed =
    "PropertyChangeNotAllowed";                                                  // create-only change
inline constexpr std::string_view kInvalidResourceName = "InvalidResourceName";  // target "name"
inline constexpr std::string_view kInvalidApiVersion = "InvalidResourceType";    // unsupported api-version
inline constexpr std::string_view kInternalServerError = "InternalServerError";

// One problem found in a request body: `target` is the JSON path ("properties.network.podCidr",
// "properties.labels[0].key", "tags.foo", `identity.userAssignedIdentities["/subscriptions/..."]`).
struct FieldError {
  std::string code;  // one of the codes above
  std::string message;
  std::string target;
};

// Everything wrong with a body (never only the first problem).
struct ValidationErrors {
  std::vector<FieldError> errors;
};

template <typename T>
using Validated = std::variant<T, ValidationErrors>;

// The stored, version-independent form of a resource.
struct Resource {
  Kind kind;
  std::string location;  // clusters and node pools (tracked resources); "" for external auths
  json::object tags;
  std::optional<json::object> identity;  // managed service identity as given, read-only members removed
  json::object properties;  // canonical property tree, defaults applied, read-only fields removed
  // Read-only properties set by the service (never taken from a request), in the canonical shape:
  // {"api":{"url":..},"console":{"url":..},"dns":{"baseDomain":..},"platform":{"issuerUrl":..},
  //  "status":{"conditions":[..]}}. EncodeProperties merges them into `properties`. provisioningState
  // does not belong here: the caller owns it.
  json::object observed;
  // The experimental features in effect (experimental.h has the shape), decided at each create or
  // update from the tags when the subscription registered the AFEC; empty otherwise.
  json::object experimental;
};

// Context a decode needs beyond the body.
struct DecodeOptions {
  // The resource name from the request URL; checked against the spec's path pattern when not empty.
  std::string name;
  // The resource ID of the request URL, named when a body's `name` differs from `name` (the body is
  // then refused for that alone, as the real service refuses it).
  std::string resource_id;
  // The resource's current provisioningState (replace, patch). A provisioningState in the body is
  // ignored when it equals this one (a GET body sent back), and is an error when it differs.
  std::optional<std::string> current_provisioning_state;
  // Where the resource lives, from the request URL; rules that compare resource IDs with the
  // cluster's subscription and resource group are skipped when empty.
  std::string subscription_id;
  std::string resource_group;
  // Node pools: the canonical body of the parent cluster (version skew, subnet VNet), or nullptr.
  const json::object* parent_cluster = nullptr;
  // Node pools: the versions the parent cluster's control plane runs (its status.activeVersions, any
  // order); empty when not known, and the skew is then judged against its version.id.
  std::vector<std::string> control_plane_versions;
  // Clusters (update): the version.id of each of its node pools, by name. A new minor more than two
  // ahead of one is refused, as the real service refuses it.
  std::vector<std::pair<std::string, std::string>> node_pool_versions;
  // External auths: the parent cluster holds another external auth (any, deleting included). A create
  // is then refused: the real service allows one external auth a cluster.
  bool other_external_auths = false;
  // The subscription registered the experimental-features AFEC (kExperimentalReleaseFeatures). With
  // it, `aro-hcp.experimental.*` tags are checked and take effect (experimental.h), and the version
  // rules allow candidate and nightly channels, a cluster version with a patch, OpenShift 5 and node
  // pool major version changes. Without it the tags are kept as tags and do nothing.
  bool experimental_release_features = false;
};

// A decode runs these phases in order, each appending its problems (so the errors come in this
// order): the request (api-version, name, body type, provisioningState); the schema of the request's
// api-version (a PATCH: its update schema, then the patched resource); create-only changes as that
// version sees them; conversion to the canonical shape; what the version cannot express and the
// create-only members left out, kept from the existing resource; the defaults (defaults.h lists
// them in order); the canonical schema, when nothing was wrong so far; the semantic rules and the
// canonical create-only check. A create moves the body through the phases without copying it.
//
// Decodes and validates the body of a PUT that creates the resource.
Validated<Resource> DecodeCreate(std::string_view api_version, Kind kind, json::value body,
                                 const DecodeOptions& options = {});
// Decodes and validates a PUT that replaces an existing resource: create-only fields that differ are
// errors (create-only fields left out keep their value); read-only fields are ignored.
Validated<Resource> DecodeReplace(std::string_view api_version, Kind kind, json::value body,
                                  const Resource& existing, const DecodeOptions& options = {});
// Applies a PATCH body (JSON merge patch of the updatable fields; null removes) to an existing
// resource, then validates the result in full.
Validated<Resource> DecodePatch(std::string_view api_version, Kind kind, json::value body,
                                const Resource& existing, const DecodeOptions& options = {});

// The refusal of a node pool DELETE (the real service's `AdmitNodePoolOnDelete`): a cluster keeps at
// least one node pool, since deleting its last one breaks the cluster today. `others_remaining`
// counts the cluster's other node pools that are not being deleted; when it is 0 the delete is
// refused (`Forbidden: The last node pool can not be deleted from a cluster.`, target `name`).
// Empty when the delete may go on.
ValidationErrors CheckNodePoolDelete(size_t others_remaining);

// The wire body of a resource for `api_version`, without the envelope: an object with "properties"
// (observed read-only values merged in), "tags", and "location" and "identity" when the resource has
// them. The caller adds id, name, type, systemData and properties.provisioningState. An unsupported
// version yields an empty object.
json::object EncodeProperties(std::string_view api_version, Resource resource);

// The full response body: EncodeProperties plus the envelope.
struct Envelope {
  std::string id;
  std::string name;
  std::string type;
  std::optional<json::object> system_data;
  std::string provisioning_state;  // omitted when empty
};
json::object EncodeResource(std::string_view api_version, Resource resource, const Envelope& envelope);

// The OpenAPI definition names of a kind: "HcpOpenShiftCluster", "NodePool", "ExternalAuth", and
// their PATCH bodies "HcpOpenShiftClusterUpdate", ...
std::string_view DefinitionName(Kind kind);
std::string_view UpdateDefinitionName(Kind kind);

// Checks a body the service sends against `definition_name` of `api_version`, read-only and
// required properties included. An empty result means the body conforms.
ValidationErrors ValidateResponse(std::string_view api_version, std::string_view definition_name,
                                  const json::value& body);

// The read-only parts of a wire body (used to fill Resource::observed from a Cluster Service view or
// a fixture). Converted to the canonical shape.
json::object ObservedFromWire(std::string_view api_version, Kind kind, const json::value& body);

// Storage form (a JSON object) and back.
json::object ToStorage(const Resource& resource);
Result<Resource> FromStorage(const json::object& stored);

}  // namespace hcprp::api
