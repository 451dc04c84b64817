// A validator driven by the OpenAPI 2.0 documents of an api-version, compiled into the library.
//
// Supported keywords: $ref (same file and the ARM common-types files), allOf, properties, required,
// type, format (int32, arm-id with x-ms-arm-id-details allowedResources, uri), enum, pattern,
// minimum/maximum, minLength/maxLength, minItems/maxItems, additionalProperties (maps), readOnly,
// default, x-ms-mutability and x-nullable. Keywords written next to a $ref (readOnly, pattern,
// x-ms-mutability, ...) apply on top of the referenced schema, as autorest reads them.
//
// Decisions:
// - Enums are closed: a value outside `enum` is an error even when x-ms-enum says modelAsString.
//   modelAsString tells SDKs to keep unknown values as strings for forward compatibility; a service
//   cannot act on a value it does not know, so ARM expects the request to be rejected.
// - Properties a schema does not describe are errors (catches "podCIDR" for "podCidr"), in requests
//   and in responses alike.
// - In requests, readOnly properties are ignored: never validated, never required, stripped before
//   storage. In responses they are validated and required like any other.
// - In requests, the cluster's operator identities are not required although every document marks
//   them required (`platform.operatorsAuthentication`, its `userAssignedIdentities`, and that
//   object's `controlPlaneOperators`, `dataPlaneOperators` and `serviceManagedIdentity`): the real
//   service takes a cluster without them and shows it without them. Responses still require them;
//   docs/validation.md lists that as the specification's own inconsistency.
//
// Thread-safety: a SchemaSet is immutable after construction except for an internal cache guarded
// by a mutex; every method may be called concurrently.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "api/api.h"
#include "core/json.h"
#include "core/mutex.h"

namespace hcprp::api {

enum class SchemaMode {
  kRequest,   // PUT bodies: readOnly ignored
  kPatch,     // PATCH bodies: like kRequest, and null means "remove" so it is allowed everywhere
  kResponse,  // bodies the service sends: readOnly validated and required
};

class SchemaSet {
 public:
  // The schemas of a served api-version, or nullptr. The returned object lives for the program.
  static const SchemaSet* ForVersion(std::string_view api_version);

  SchemaSet(const SchemaSet&) = delete;
  SchemaSet& operator=(const SchemaSet&) = delete;
  ~SchemaSet();

  std::string_view api_version() const { return api_version_; }
  bool HasDefinition(std::string_view definition) const;

  // Appends every problem of `value` against definitions/<definition> to `out`; `path` prefixes
  // targets.
  void Validate(std::string_view definition, const json::value& value, SchemaMode mode,
                std::vector<FieldError>& out, const std::string& path = "") const;

  // Removes readOnly properties, recursively.
  void StripReadOnly(std::string_view definition, json::value& value) const;
  // Removes properties the definition does not describe, recursively.
  void Prune(std::string_view definition, json::value& value) const;
  // Sets absent properties that have a `default`, in every object present in `value`.
  void ApplyDefaults(std::string_view definition, json::value& value) const;
  // Keeps only readOnly properties (and the objects leading to them).
  json::value ExtractReadOnly(std::string_view definition, const json::value& value) const;
  // For each property whose x-ms-mutability lacks "update": a value in `now` that differs from the
  // one in `before` is a PropertyChangeNotAllowed error. Updatable objects are descended into.
  void CheckCreateOnly(std::string_view definition, const json::value& now, const json::value& before,
                       std::vector<FieldError>& out) const;
  // For each create-only property absent from `now` and present in `before`, copies it over.
  void FillCreateOnly(std::string_view definition, json::value& now, const json::value& before) const;

  // The `pattern` of a path parameter ("hcpOpenShiftClusterName"), if the document declares one.
  std::optional<std::string> PathParameterPattern(std::string_view name) const;
  // Whether `text` matches an ECMAScript `pattern` (compiled once and cached). Texts longer than
  // 4096 bytes never match; a pattern that does not compile matches everything.
  bool Matches(const std::string& pattern, std::string_view text) const;

  struct Doc;
  struct Node;
  struct NodeRef;
  struct PathRef;

 private:
  explicit SchemaSet(std::string api_version);
  const Node* Resolve(std::string_view definition) const;
  const Node* NodeFor(size_t doc, const json::object* schema) const;
  const Node* NodeFor(const NodeRef& ref) const;
  const std::regex* Regex(const std::string& pattern) const;

  void ValidateNode(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                    std::vector<FieldError>& out, int depth) const;
  void ValidateObject(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                      std::vector<FieldError>& out, int depth) const;
  void ValidateArray(const Node& node, const json::value& v, SchemaMode mode, const PathRef& at,
                     std::vector<FieldError>& out, int depth) const;
  // A required object left out of a request, as the real service reports it: its own required
  // members (recursively), each "Required value". False when it has none to report.
  bool ReportRequiredMembers(const Node& node, const std::string& target, std::vector<FieldError>& out,
                             int depth) const;
  void StripNode(const Node& node, json::value& v, bool read_only_only) const;
  void DefaultsNode(const Node& node, json::value& v) const;
  json::value ExtractNode(const Node& node, const json::value& v) const;
  void CreateOnlyNode(const Node& node, const json::value& now, const json::value& before,
                      const std::string& path, bool frozen, std::vector<FieldError>& out) const;
  void FillNode(const Node& node, json::value& now, const json::value& before) const;

  std::string api_version_;
  std::vector<std::unique_ptr<Doc>> docs_;  // [0] is the api-version's openapi.json
  // Filled on first use and read on every request after that: readers share the lock.
  mutable SharedMutex mu_;
  mutable std::map<const json::object*, std::unique_ptr<Node>> nodes_ HCPRP_GUARDED_BY(mu_);
  mutable std::map<std::string, std::unique_ptr<std::regex>> regexes_ HCPRP_GUARDED_BY(mu_);
};

// Appends `key` to a JSON path: "a.b", or a["..."] when the key is not a plain identifier.
std::string JoinPath(const std::string& path, std::string_view key);
std::string IndexPath(const std::string& path, size_t index);

}  // namespace hcprp::api
