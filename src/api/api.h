// API versions and the internal resource model.
//
// The internal model is one canonical JSON shape per resource kind: the property tree of the newest
// stable api-version (2026-10-01). Every served api-version converts its wire bodies to and from it,
// so a resource created with one version reads back with another.
#pragma once

#include <optional>
#include <variant>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::api {

enum class Kind { kCluster, kNodePool, kExternalAuth };

inline constexpr std::string_view kStableVersion = "2026-10-01";
inline constexpr std::string_view kPreviewVersion = "2024-06-10-preview";

bool IsSupportedVersion(std::string_view api_version);
std::vector<std::string> SupportedVersions();

// One problem found in a request body: `target` is the JSON path ("properties.network.podCidr").
struct FieldError {
  std::string code;  // "InvalidRequestContent", "InvalidParameter", ...
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
  std::string location;             // clusters only; children inherit their parent's
  json::object tags;
  std::optional<json::object> identity;  // managed service identity as given (clusters)
  json::object properties;          // canonical property tree, defaults applied, read-only fields removed
};

// Decodes and validates the body of a PUT that creates the resource.
Validated<Resource> DecodeCreate(std::string_view api_version, Kind kind, const json::value& body);
// Decodes and validates a PUT that replaces an existing resource: create-only fields that differ are
// errors; read-only fields are ignored.
Validated<Resource> DecodeReplace(std::string_view api_version, Kind kind, const json::value& body,
                                  const Resource& existing);
// Applies a PATCH body (JSON merge patch of the updatable fields) to an existing resource.
Validated<Resource> DecodePatch(std::string_view api_version, Kind kind, const json::value& body,
                                const Resource& existing);

// The wire properties (and identity) of a resource for `api_version`; the caller adds the envelope
// (id, name, type, systemData, provisioningState, etag).
json::object EncodeProperties(std::string_view api_version, const Resource& resource);

// Storage form (a JSON object) and back.
json::object ToStorage(const Resource& resource);
Result<Resource> FromStorage(const json::object& stored);

}  // namespace hcprp::api
