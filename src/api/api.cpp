#include "api/api.h"

#include <set>
#include <tuple>

#include "api/conversion.h"
#include "api/defaults.h"
#include "api/experimental.h"
#include "api/rules_common.h"
#include "api/schema.h"
#include "api/semantic.h"

namespace hcprp::api {
namespace {

enum class Op { kCreate, kReplace, kPatch };

constexpr int kStorageSchema = 1;

// The cluster's version.id is create-only in 2024-06-10-preview's document, yet the real service
// upgrades a cluster whatever api-version asks for it (the version rules do not depend on it), so
// the canonical model's mutability applies.
bool UpdatableInEveryVersion(std::string_view target) { return target == "properties.version.id"; }

// The canonical body; the first form takes the resource apart instead of copying it.
json::object BodyOf(Resource&& r, bool with_observed) {
  json::object body;
  if (r.kind != Kind::kExternalAuth) {
    body["location"] = r.location;
    body["tags"] = std::move(r.tags);
  }
  if (r.identity) body["identity"] = std::move(*r.identity);
  if (with_observed) MergeMissing(r.properties, r.observed);
  body["properties"] = std::move(r.properties);
  return body;
}
json::object BodyOf(const Resource& r, bool with_observed) {
  Resource copy{r.kind, r.location, r.tags, r.identity, r.properties, {}};
  if (with_observed) copy.observed = r.observed;
  return BodyOf(std::move(copy), with_observed);
}

void Dedupe(std::vector<FieldError>& errors) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<FieldError> out;
  for (auto& e : errors) {
    if (seen.emplace(e.code, e.target, e.message).second) out.push_back(std::move(e));
  }
  errors = std::move(out);
}

ValidationErrors Fail(std::vector<FieldError> errors) {
  Dedupe(errors);
  return ValidationErrors{std::move(errors)};
}

// One decode as it passes through the phases of Decode: what the request says, and the problems
// found so far (every phase appends; none stops at the first problem).
struct DecodeRun {
  Op op;
  std::string_view api_version;
  Kind kind;
  const Resource* existing;  // replace and patch; nullptr on a create
  const DecodeOptions& options;
  const SchemaSet* wire_schemas = nullptr;  // the request's api-version, set by CheckRequest
  std::vector<FieldError> errors;
  // A create-only change the wire check reported: the canonical check would report it again.
  bool create_only_broken = false;
  json::object existing_body;  // the canonical body of `existing`, set by TakeOverExisting
  json::object experimental;   // the experimental features in effect, set by AdmitExperimental
};

void CheckProvisioningState(DecodeRun& run, const json::value& body) {
  const json::value* state = FindPointer(body, "/properties/provisioningState");
  if (state == nullptr || state->is_null()) return;
  // A GET body sent back carries the current state: that is ignored; any other value (and any
  // value on a create) is refused, as the real service refuses a change of an immutable field.
  if (run.op != Op::kCreate && run.options.current_provisioning_state && state->is_string() &&
      state->get_string() == *run.options.current_provisioning_state) {
    return;
  }
  run.errors.push_back(FieldError{std::string(kInvalidRequestContent), "Forbidden: field is immutable",
                                  "properties.provisioningState"});
}

// A body whose `name` is not the URL's (compared exactly) names another resource: refused alone.
bool CheckBodyName(DecodeRun& run, const json::value& body) {
  auto given = GetString(body.get_object(), "name");
  if (!given || given->empty() || run.options.name.empty() || *given == run.options.name) return true;
  run.errors.push_back(FieldError{std::string(kInvalidRequestContent),
                                  "Invalid value: " + json::serialize(json::value(*given)) +
                                      ": name must match resourceID path: " + run.options.resource_id,
                                  "name"});
  return false;
}

// Phase 1: what is checked before the body's schema (the api-version, the name, the body's type,
// provisioningState). False when the decode cannot go on.
bool CheckRequest(DecodeRun& run, const json::value& body) {
  run.wire_schemas = SchemaSet::ForVersion(run.api_version);
  if (run.wire_schemas == nullptr) {
    run.errors.push_back(FieldError{std::string(kInvalidApiVersion),
                                    "api-version '" + std::string(run.api_version) + "' is not supported",
                                    "api-version"});
    return false;
  }
  if (run.existing != nullptr && run.existing->kind != run.kind) {
    run.errors.push_back(
        FieldError{std::string(kInternalServerError), "existing resource is of another kind", ""});
    return false;
  }
  if (!run.options.name.empty()) CheckResourceName(*run.wire_schemas, run.kind, run.options.name, run.errors);
  if (!body.is_object()) {
    run.errors.push_back(
        FieldError{std::string(kInvalidRequestContent), "the body must be a JSON object", ""});
    return false;
  }
  if (!CheckBodyName(run, body)) return false;
  CheckProvisioningState(run, body);
  return true;
}

// Takes out of a PATCH body the nulls the real service refuses (rules::NullChecked: its conversion
// checks them for null whether or not the version's update schema names them) and reports them. An
// object left empty by that goes too (an empty object patches nothing).
void RefuseNullChecked(DecodeRun& run, json::object& at, const std::string& path) {
  std::vector<std::string> drop;
  for (auto& member : at) {
    std::string target = path + "." + std::string(member.key());
    if (member.value().is_null() && rules::NullChecked(target)) {
      run.errors.push_back(
          FieldError{std::string(kInvalidRequestContent), "Required value: field cannot be null", target});
      drop.emplace_back(member.key());
    } else if (member.value().is_object() && !member.value().get_object().empty()) {
      RefuseNullChecked(run, member.value().as_object(), target);
      if (member.value().get_object().empty()) drop.emplace_back(member.key());
    }
  }
  for (const auto& key : drop) at.erase(key);
}

// Phase 2: the body against the schema of its api-version, read-only members removed. A PATCH is
// checked against the update schema, then applied to the existing resource and the result checked
// as a PUT body. Nullopt when a PATCH body is refused (its result would only repeat the problems).
std::optional<json::value> ValidateWire(DecodeRun& run, json::value body) {
  const SchemaSet& schemas = *run.wire_schemas;
  const std::string_view definition = DefinitionName(run.kind);
  json::value wire;
  if (run.op == Op::kPatch) {
    // provisioningState is not part of the PATCH schema; CheckRequest checked it and it is dropped.
    json::value patch = std::move(body);
    if (json::value* props = patch.as_object().if_contains("properties"); props && props->is_object()) {
      props->get_object().erase("provisioningState");
      RefuseNullChecked(run, props->as_object(), "properties");
    }
    size_t before = run.errors.size();
    schemas.Validate(UpdateDefinitionName(run.kind), patch, SchemaMode::kPatch, run.errors);
    if (run.errors.size() != before) return std::nullopt;
    schemas.StripReadOnly(UpdateDefinitionName(run.kind), patch);
    wire = CanonicalToWire(schemas, run.kind, BodyOf(*run.existing, false));
    MergePatch(wire, patch);
  } else {
    wire = std::move(body);
  }
  schemas.Validate(definition, wire, SchemaMode::kRequest, run.errors);
  schemas.StripReadOnly(definition, wire);
  return wire;
}

// Phase 3 (replace, patch): create-only is what the request's api-version says (etcd, for one, is
// create-only before 2026-06-30-preview and updatable from then on), so the wire body is compared
// with the existing resource as that version shows it. Create-only members the body leaves out keep
// their value.
void CheckCreateOnlyWire(DecodeRun& run, json::value& wire) {
  if (run.existing == nullptr) return;
  const SchemaSet& schemas = *run.wire_schemas;
  const std::string_view definition = DefinitionName(run.kind);
  json::value existing_wire = CanonicalToWire(schemas, run.kind, BodyOf(*run.existing, false));
  schemas.FillCreateOnly(definition, wire, existing_wire);
  json::value defaulted = wire;  // the stored resource has its defaults; compare like with like
  ApplyComparisonDefaults(schemas, run.kind, defaulted);
  std::vector<FieldError> changes;
  schemas.CheckCreateOnly(definition, defaulted, existing_wire, changes);
  for (auto& change : changes) {
    if (UpdatableInEveryVersion(change.target)) continue;
    run.errors.push_back(std::move(change));
    run.create_only_broken = true;
  }
}

// Phase 4: the wire body in the canonical shape. The envelope members a client may echo back (id,
// name, type, systemData are read-only and already gone) are dropped.
json::value ConvertToCanonical(const DecodeRun& run, json::value& wire) {
  json::object canonical;
  if (json::object* w = wire.if_object()) {  // not used after this
    for (std::string_view key : {"location", "tags", "identity", "properties"}) {
      if (auto it = w->find(key); it != w->end()) canonical[key] = std::move(it->value());
    }
  }
  return WireToCanonical(run.api_version, run.kind, std::move(canonical));
}

// Removes from `all` what `seen` holds, recursively; objects left empty go too.
void RemoveSeen(json::object& all, const json::object& seen) {
  std::vector<std::string> drop;
  for (auto& member : all) {
    auto it = seen.find(member.key());
    if (it == seen.end()) continue;
    if (member.value().is_object() && it->value().is_object()) {
      RemoveSeen(member.value().get_object(), it->value().get_object());
      if (member.value().get_object().empty()) drop.emplace_back(member.key());
    } else {
      drop.emplace_back(member.key());
    }
  }
  for (const auto& k : drop) all.erase(k);
}

// A replace that leaves `tags` out (or sends null) keeps the resource's tags, as the real service does;
// tags given, even empty, replace them.
void KeepOmittedTags(const DecodeRun& run, json::object& canonical) {
  if (run.op != Op::kReplace) return;
  auto it = canonical.find("tags");
  if (it != canonical.end() && !it->value().is_null()) return;
  auto old = run.existing_body.find("tags");
  if (old == run.existing_body.end()) {
    canonical.erase("tags");
  } else {
    canonical["tags"] = old->value();
  }
}

// A node pool replace that leaves out version.id or platform.subnetId keeps the stored ones: the real
// service sets them when the pool is made (the subnet from the cluster) and does not ask a replace
// to repeat them. Runs on the wire body, before the create-only check (both members are create-only
// and spelled alike in every api-version).
void KeepOmittedNodePoolValues(const DecodeRun& run, json::value& wire) {
  if (run.op != Op::kReplace || run.kind != Kind::kNodePool || !wire.is_object()) return;
  const json::object* old_props = &run.existing->properties;
  json::value* props = wire.as_object().if_contains("properties");
  if (props == nullptr || !props->is_object()) return;
  for (std::string_view block : {"version", "platform"}) {
    const std::string_view member = block == "version" ? "id" : "subnetId";
    const json::object* old_block = GetObject(*old_props, block);
    const json::value* old_value = old_block ? old_block->if_contains(member) : nullptr;
    if (old_value == nullptr) continue;
    json::value& now = props->as_object()[block];
    if (now.is_null()) now = json::object();
    if (!now.is_object()) continue;
    const json::value* given = now.as_object().if_contains(member);
    if (given == nullptr || given->is_null()) now.as_object()[member] = *old_value;
  }
}

// Phase 5 (replace, patch): what the request keeps of the existing resource: the members its
// api-version cannot express (found by comparing the existing resource with its own round trip
// through the version) and the create-only members the body leaves out.
void TakeOverExisting(DecodeRun& run, json::value& canonical) {
  if (run.existing == nullptr) return;
  run.existing_body = BodyOf(*run.existing, false);
  if (run.api_version != kStableVersion) {
    json::object round_trip = WireToCanonical(
        run.api_version, run.kind, CanonicalToWire(*run.wire_schemas, run.kind, run.existing_body));
    json::object hidden = run.existing_body;
    RemoveSeen(hidden, round_trip);
    MergeMissing(canonical.get_object(), hidden);
  }
  SchemaSet::ForVersion(kStableVersion)
      ->FillCreateOnly(DefinitionName(run.kind), canonical, run.existing_body);
  KeepOmittedTags(run, canonical.get_object());
}

// Phase 6 (node pool create, after the defaults): a node pool without platform.subnetId takes its
// cluster's, as the real service fills it (defaults.h, 3f).
void InheritClusterSubnet(const DecodeRun& run, json::value& canonical) {
  if (run.kind != Kind::kNodePool || run.op != Op::kCreate || run.options.parent_cluster == nullptr) return;
  const json::object* cluster_props = GetObject(*run.options.parent_cluster, "properties");
  const json::object* cluster_platform = cluster_props ? GetObject(*cluster_props, "platform") : nullptr;
  std::optional<std::string_view> subnet =
      cluster_platform ? GetString(*cluster_platform, "subnetId") : std::nullopt;
  if (!subnet) return;
  json::value* props = canonical.as_object().if_contains("properties");
  if (props == nullptr || !props->is_object()) return;
  json::value& platform = props->as_object()["platform"];
  if (platform.is_null()) platform = json::object();
  if (!platform.is_object()) return;
  const json::value* own = platform.as_object().if_contains("subnetId");
  if (own == nullptr || own->is_null()) platform.as_object()["subnetId"] = json::string(*subnet);
}

// Phase 7: the conversion must produce a valid stable body; if it does not, say so instead of
// storing it. Only a body without problems so far is checked: a problem of the request would be
// reported again under the canonical names.
void ValidateConverted(DecodeRun& run, const json::value& canonical) {
  if (!run.errors.empty() || run.api_version == kStableVersion) return;
  SchemaSet::ForVersion(kStableVersion)
      ->Validate(DefinitionName(run.kind), canonical, SchemaMode::kRequest, run.errors);
}

// Phase 8: the service's rules on the canonical body, then the create-only check of the canonical
// model, which catches what the conversion changed (a change the wire check reported already would
// only be reported twice, under the canonical names).
void CheckRules(DecodeRun& run, const json::value& canonical) {
  const json::object* existing = run.existing != nullptr ? &run.existing_body : nullptr;
  CheckSemantics(run.kind, canonical.get_object(), existing, run.options, run.errors);
  if (existing != nullptr && !run.create_only_broken) {
    SchemaSet::ForVersion(kStableVersion)
        ->CheckCreateOnly(DefinitionName(run.kind), canonical, run.existing_body, run.errors);
  }
}

// Phase 7a: with the experimental-features AFEC, the experimental tags (experimental.h), which may
// move a cluster version's patch to its exact version before the rules see it.
void AdmitExperimental(DecodeRun& run, json::value& canonical) {
  if (!run.options.experimental_release_features) return;
  run.experimental =
      AdmitExperimentalFeatures(run.kind, canonical.get_object(), run.op == Op::kCreate, run.errors);
}

// Phase 9: the decoded resource, taken apart from the canonical body.
Resource ToResource(const DecodeRun& run, json::object& c) {
  Resource r{run.kind, "", {}, std::nullopt, {}, {}};
  if (auto loc = GetString(c, "location")) r.location = std::string(*loc);
  auto take = [&c](std::string_view key) -> json::object* {
    auto it = c.find(key);
    return it == c.end() ? nullptr : it->value().if_object();
  };
  if (json::object* tags = take("tags")) r.tags = std::move(*tags);
  if (json::object* identity = take("identity")) r.identity = std::move(*identity);
  if (json::object* props = take("properties")) r.properties = std::move(*props);
  if (run.existing != nullptr) r.observed = run.existing->observed;
  r.experimental = run.experimental;
  return r;
}

Validated<Resource> Decode(Op op, std::string_view api_version, Kind kind, json::value body,
                           const Resource* existing, const DecodeOptions& options) {
  DecodeRun run{op, api_version, kind, existing, options};
  if (!CheckRequest(run, body)) return Fail(std::move(run.errors));
  std::optional<json::value> wire = ValidateWire(run, std::move(body));
  if (!wire) return Fail(std::move(run.errors));
  KeepOmittedNodePoolValues(run, *wire);
  CheckCreateOnlyWire(run, *wire);
  json::value canonical = ConvertToCanonical(run, *wire);
  TakeOverExisting(run, canonical);
  ApplyCanonicalDefaults(api_version, kind, canonical);  // phase 6
  InheritClusterSubnet(run, canonical);
  ValidateConverted(run, canonical);
  AdmitExperimental(run, canonical);
  CheckRules(run, canonical);
  if (!run.errors.empty()) {
    rules::KeepMalformedIdsAlone(run.errors);
    return Fail(std::move(run.errors));
  }
  return ToResource(run, canonical.get_object());  // `canonical` is taken apart: not used after this
}

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return "cluster";
    case Kind::kNodePool:
      return "nodePool";
    case Kind::kExternalAuth:
      return "externalAuth";
  }
  return "";
}

}  // namespace

std::string_view DefinitionName(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return "HcpOpenShiftCluster";
    case Kind::kNodePool:
      return "NodePool";
    case Kind::kExternalAuth:
      return "ExternalAuth";
  }
  return "";
}

std::string_view UpdateDefinitionName(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return "HcpOpenShiftClusterUpdate";
    case Kind::kNodePool:
      return "NodePoolUpdate";
    case Kind::kExternalAuth:
      return "ExternalAuthUpdate";
  }
  return "";
}

Validated<Resource> DecodeCreate(std::string_view api_version, Kind kind, json::value body,
                                 const DecodeOptions& options) {
  return Decode(Op::kCreate, api_version, kind, std::move(body), nullptr, options);
}
Validated<Resource> DecodeReplace(std::string_view api_version, Kind kind, json::value body,
                                  const Resource& existing, const DecodeOptions& options) {
  return Decode(Op::kReplace, api_version, kind, std::move(body), &existing, options);
}
Validated<Resource> DecodePatch(std::string_view api_version, Kind kind, json::value body,
                                const Resource& existing, const DecodeOptions& options) {
  return Decode(Op::kPatch, api_version, kind, std::move(body), &existing, options);
}

json::object EncodeProperties(std::string_view api_version, Resource resource) {
  const SchemaSet* schemas = SchemaSet::ForVersion(api_version);
  if (schemas == nullptr) return {};
  const Kind kind = resource.kind;
  return CanonicalToWire(*schemas, kind, BodyOf(std::move(resource), true));
}

json::object EncodeResource(std::string_view api_version, Resource resource, const Envelope& envelope) {
  json::object body = EncodeProperties(api_version, std::move(resource));
  if (!envelope.id.empty()) body["id"] = envelope.id;
  if (!envelope.name.empty()) body["name"] = envelope.name;
  if (!envelope.type.empty()) body["type"] = envelope.type;
  if (envelope.system_data) body["systemData"] = *envelope.system_data;
  if (!envelope.provisioning_state.empty()) {
    json::value& props = body["properties"];
    if (!props.is_object()) props = json::object();
    props.get_object()["provisioningState"] = envelope.provisioning_state;
  }
  return body;
}

ValidationErrors ValidateResponse(std::string_view api_version, std::string_view definition_name,
                                  const json::value& body) {
  ValidationErrors result;
  const SchemaSet* schemas = SchemaSet::ForVersion(api_version);
  if (schemas == nullptr) {
    result.errors.push_back(FieldError{std::string(kInvalidApiVersion),
                                       "api-version '" + std::string(api_version) + "' is not supported",
                                       "api-version"});
    return result;
  }
  schemas->Validate(definition_name, body, SchemaMode::kResponse, result.errors);
  return result;
}

json::object ObservedFromWire(std::string_view api_version, Kind kind, const json::value& body) {
  const SchemaSet* schemas = SchemaSet::ForVersion(api_version);
  if (schemas == nullptr) return {};
  json::value ro = schemas->ExtractReadOnly(DefinitionName(kind), body);
  json::object wrapper;
  if (const json::object* props = GetObject(ro.get_object(), "properties")) wrapper["properties"] = *props;
  wrapper = WireToCanonical(api_version, kind, std::move(wrapper));
  json::object observed;
  if (const json::object* props = GetObject(wrapper, "properties")) observed = *props;
  observed.erase("provisioningState");
  return observed;
}

json::object ToStorage(const Resource& resource) {
  json::object o;
  o["schema"] = kStorageSchema;
  o["kind"] = KindName(resource.kind);
  o["location"] = resource.location;
  o["tags"] = resource.tags;
  if (resource.identity) o["identity"] = *resource.identity;
  o["properties"] = resource.properties;
  o["observed"] = resource.observed;
  if (!resource.experimental.empty()) o["experimental"] = resource.experimental;
  return o;
}

Result<Resource> FromStorage(const json::object& stored) {
  auto schema = GetInt(stored, "schema");
  if (!schema || *schema != kStorageSchema) return Error::Corruption("stored resource has an unknown schema");
  auto kind_name = GetString(stored, "kind");
  if (!kind_name) return Error::Corruption("stored resource has no kind");
  Resource r{Kind::kCluster, "", {}, std::nullopt, {}, {}};
  if (*kind_name == KindName(Kind::kCluster)) {
    r.kind = Kind::kCluster;
  } else if (*kind_name == KindName(Kind::kNodePool)) {
    r.kind = Kind::kNodePool;
  } else if (*kind_name == KindName(Kind::kExternalAuth)) {
    r.kind = Kind::kExternalAuth;
  } else {
    return Error::Corruption("stored resource has unknown kind '" + std::string(*kind_name) + "'");
  }
  const json::object* props = GetObject(stored, "properties");
  if (props == nullptr) return Error::Corruption("stored resource has no properties");
  r.properties = *props;
  if (auto loc = GetString(stored, "location")) r.location = std::string(*loc);
  if (const json::object* tags = GetObject(stored, "tags")) r.tags = *tags;
  if (const json::object* identity = GetObject(stored, "identity")) r.identity = *identity;
  if (const json::object* observed = GetObject(stored, "observed")) r.observed = *observed;
  if (const json::object* experimental = GetObject(stored, "experimental")) r.experimental = *experimental;
  return r;
}

}  // namespace hcprp::api
