#include "api/api.h"

#include <functional>
#include <set>
#include <tuple>

#include "api/conversion.h"
#include "api/schema.h"
#include "api/semantic.h"

namespace hcprp::api {
namespace {

enum class Op { kCreate, kReplace, kPatch };

constexpr int kStorageSchema = 1;

// Optional objects that a create fills with their defaults when the body leaves them out, so that
// a read shows the values in effect (network CIDRs, API visibility, ...).
std::vector<std::vector<std::string_view>> MaterializedObjects(Kind kind) {
  switch (kind) {
    case Kind::kCluster:
      return {{"properties", "network"},
              {"properties", "api"},
              {"properties", "ingress"},
              {"properties", "clusterImageRegistry"}};
    case Kind::kNodePool:
      return {{"properties", "platform", "osDisk"}};
    case Kind::kExternalAuth:
      return {};
  }
  return {};
}

void Materialize(Kind kind, json::object& body) {
  for (const auto& path : MaterializedObjects(kind)) {
    json::object* cur = &body;
    for (auto key : path) {
      json::value& next = (*cur)[key];
      if (next.is_null()) next = json::object();
      cur = next.if_object();
      if (cur == nullptr) break;
    }
  }
}

// Fills defaults the spec states in prose instead of `default:`.
void ProseDefaults(Kind kind, json::object& body) {
  if (kind == Kind::kExternalAuth) return;
  auto props = body.find("properties");
  if (props == body.end() || !props->value().is_object()) return;
  auto v = props->value().get_object().find("version");
  if (v == props->value().get_object().end() || !v->value().is_object()) return;
  json::object& vo = v->value().get_object();
  if (!vo.contains("channelGroup")) vo["channelGroup"] = "stable";
}

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

void CheckProvisioningState(Op op, const json::value& body, const DecodeOptions& options,
                            std::vector<FieldError>& out) {
  const json::value* state = FindPointer(body, "/properties/provisioningState");
  if (state == nullptr || state->is_null()) return;
  // A GET body sent back carries the current state: that is ignored; any other value (and any
  // value on a create) is refused, as the real service refuses a change of an immutable field.
  if (op != Op::kCreate && options.current_provisioning_state && state->is_string() &&
      state->get_string() == *options.current_provisioning_state) {
    return;
  }
  out.push_back(FieldError{std::string(kInvalidRequestContent), "Forbidden: field is immutable",
                           "properties.provisioningState"});
}

Validated<Resource> Decode(Op op, std::string_view api_version, Kind kind, json::value body,
                           const Resource* existing, const DecodeOptions& options) {
  std::vector<FieldError> errors;
  const SchemaSet* wire_schemas = SchemaSet::ForVersion(api_version);
  const SchemaSet* stable = SchemaSet::ForVersion(kStableVersion);
  if (wire_schemas == nullptr) {
    errors.push_back(FieldError{std::string(kInvalidApiVersion),
                                "api-version '" + std::string(api_version) + "' is not supported",
                                "api-version"});
    return Fail(std::move(errors));
  }
  if (existing != nullptr && existing->kind != kind) {
    errors.push_back(
        FieldError{std::string(kInternalServerError), "existing resource is of another kind", ""});
    return Fail(std::move(errors));
  }
  if (!options.name.empty()) CheckResourceName(*wire_schemas, kind, options.name, errors);
  if (!body.is_object()) {
    errors.push_back(FieldError{std::string(kInvalidRequestContent), "the body must be a JSON object", ""});
    return Fail(std::move(errors));
  }
  const std::string_view definition = DefinitionName(kind);
  CheckProvisioningState(op, body, options, errors);

  json::value wire;
  if (op == Op::kPatch) {
    // provisioningState is not part of the PATCH schema; it was checked above and is dropped here.
    json::value patch = std::move(body);
    if (json::value* props = patch.as_object().if_contains("properties"); props && props->is_object()) {
      props->get_object().erase("provisioningState");
    }
    size_t before = errors.size();
    wire_schemas->Validate(UpdateDefinitionName(kind), patch, SchemaMode::kPatch, errors);
    if (errors.size() != before) return Fail(std::move(errors));
    wire_schemas->StripReadOnly(UpdateDefinitionName(kind), patch);
    wire = CanonicalToWire(*wire_schemas, kind, BodyOf(*existing, false));
    MergePatch(wire, patch);
    wire_schemas->Validate(definition, wire, SchemaMode::kRequest, errors);
  } else {
    wire = std::move(body);
    wire_schemas->Validate(definition, wire, SchemaMode::kRequest, errors);
  }
  wire_schemas->StripReadOnly(definition, wire);
  // Create-only is what the request's api-version says (etcd, for one, is create-only before
  // 2026-06-30-preview and updatable from then on); compare with the existing resource as that
  // version shows it. Create-only members the body leaves out keep their value.
  size_t before_create_only = errors.size();
  if (existing != nullptr) {
    json::value existing_wire = CanonicalToWire(*wire_schemas, kind, BodyOf(*existing, false));
    wire_schemas->FillCreateOnly(definition, wire, existing_wire);
    json::value defaulted = wire;  // the stored resource has its defaults; compare like with like
    if (defaulted.is_object()) Materialize(kind, defaulted.get_object());
    wire_schemas->ApplyDefaults(definition, defaulted);
    std::vector<FieldError> changes;
    wire_schemas->CheckCreateOnly(definition, defaulted, existing_wire, changes);
    for (auto& change : changes) {
      if (!UpdatableInEveryVersion(change.target)) errors.push_back(std::move(change));
    }
  }
  const bool create_only_broken = errors.size() != before_create_only;
  // Drop the envelope members a client may echo back (id, name, type, systemData are read-only and
  // already gone); keep only what the canonical body holds.
  json::object canonical;
  if (json::object* w = wire.if_object()) {  // not used after this
    for (std::string_view key : {"location", "tags", "identity", "properties"}) {
      if (auto it = w->find(key); it != w->end()) canonical[key] = std::move(it->value());
    }
  }
  canonical = WireToCanonical(api_version, kind, std::move(canonical));

  json::value canonical_value = std::move(canonical);
  json::object existing_body;
  if (existing != nullptr) {
    existing_body = BodyOf(*existing, false);
    if (api_version != kStableVersion) {
      // Keep what this api-version cannot express: compare the existing resource with its own
      // round trip through the version and carry over what the trip lost.
      json::object round_trip =
          WireToCanonical(api_version, kind, CanonicalToWire(*wire_schemas, kind, existing_body));
      json::object hidden = existing_body;
      std::function<void(json::object&, const json::object&)> subtract = [&](json::object& all,
                                                                             const json::object& seen) {
        std::vector<std::string> drop;
        for (auto& member : all) {
          auto it = seen.find(member.key());
          if (it == seen.end()) continue;
          if (member.value().is_object() && it->value().is_object()) {
            subtract(member.value().get_object(), it->value().get_object());
            if (member.value().get_object().empty()) drop.emplace_back(member.key());
          } else {
            drop.emplace_back(member.key());
          }
        }
        for (const auto& k : drop) all.erase(k);
      };
      subtract(hidden, round_trip);
      MergeMissing(canonical_value.get_object(), hidden);
    }
    stable->FillCreateOnly(definition, canonical_value, existing_body);
  }
  ApplyConversionDefaults(api_version, kind, canonical_value.get_object());
  Materialize(kind, canonical_value.get_object());
  stable->ApplyDefaults(definition, canonical_value);
  ProseDefaults(kind, canonical_value.get_object());

  if (errors.empty() && api_version != kStableVersion) {
    // The conversion must produce a valid stable body; if it does not, say so instead of storing it.
    stable->Validate(definition, canonical_value, SchemaMode::kRequest, errors);
  }
  ApplyServiceDefaults(kind, canonical_value.get_object());
  CheckSemantics(kind, canonical_value.get_object(), existing ? &existing_body : nullptr, options, errors);
  // The canonical check catches what the conversion changed; a change the wire check reported
  // already would only be reported twice, under the canonical names.
  if (existing != nullptr && !create_only_broken) {
    stable->CheckCreateOnly(definition, canonical_value, existing_body, errors);
  }
  if (!errors.empty()) return Fail(std::move(errors));

  json::object& c = canonical_value.get_object();  // moved from: not used after this
  Resource r{kind, "", {}, std::nullopt, {}, {}};
  if (auto loc = GetString(c, "location")) r.location = std::string(*loc);
  auto take = [&c](std::string_view key) -> json::object* {
    auto it = c.find(key);
    return it == c.end() ? nullptr : it->value().if_object();
  };
  if (json::object* tags = take("tags")) r.tags = std::move(*tags);
  if (json::object* identity = take("identity")) r.identity = std::move(*identity);
  if (json::object* props = take("properties")) r.properties = std::move(*props);
  if (existing != nullptr) r.observed = existing->observed;
  return r;
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
  return r;
}

}  // namespace hcprp::api
