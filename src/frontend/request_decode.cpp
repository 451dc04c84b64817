// What a PUT or PATCH body becomes before and after api::Decode*: the service-owned values the real
// service sets whatever the body says (location, systemData), the decode context, and the ARM error
// of a refused body.
#include "frontend/request_decode.h"
#include "core/time.h"
#include "core/uuid.h"
#include "frontend/internal.h"

namespace hcprp::frontend {

json::value WithServiceValues(const RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
                              std::string_view location, bool create) {
  const arm::ResourceKind kind = id.kind;
  json::value out = body;
  json::object* o = out.if_object();
  if (o == nullptr) return out;
  if (kind != arm::ResourceKind::kExternalAuth && !location.empty() && ctx.method == bhttp::verb::put) {
    // A location of the wrong type is still the schema's to refuse.
    const json::value* given = o->if_contains("location");
    if (given == nullptr || given->is_null() || given->is_string()) (*o)["location"] = location;
  }
  if (create && kind == arm::ResourceKind::kCluster) {
    json::value* props = o->if_contains("properties");
    json::value* platform =
        props && props->is_object() ? props->get_object().if_contains("platform") : nullptr;
    if (platform != nullptr && platform->is_object()) {
      json::object& p = platform->get_object();
      const json::value* given = p.if_contains("managedResourceGroup");
      if (given == nullptr || given->is_null() || (given->is_string() && given->get_string().empty())) {
        p["managedResourceGroup"] = DefaultManagedResourceGroup(id.Name());
      }
    }
  }
  return out;
}

std::string DefaultManagedResourceGroup(std::string_view cluster_name) {
  return "arohcp-" + std::string(cluster_name.substr(0, 45)) + "-" + NewUuidV4();
}

api::DecodeOptions DecodeOptionsFor(const arm::ResourceId& id, const std::optional<LoadedResource>& parent,
                                    std::optional<json::object>& parent_body) {
  api::DecodeOptions opts;
  opts.name = id.Name();
  opts.subscription_id = id.subscription_id;
  opts.resource_group = id.resource_group;
  if (parent) {
    if (auto stored = api::FromStorage(parent->doc.resource); stored.ok()) {
      parent_body = json::object{{"properties", stored->properties}};
      opts.parent_cluster = &*parent_body;
    }
  }
  return opts;
}

std::optional<json::object> CompleteSystemData(std::optional<json::object> data, TimePoint now) {
  json::object out = data.value_or(json::object());
  const std::string stamp = FormatRfc3339(now);
  auto fill = [&](std::string_view key, std::string_view value) {
    auto current = GetString(out, key);
    if (!current || current->empty()) out[key] = value;
  };
  fill("createdBy", kUnknownActor);
  fill("createdByType", "Application");
  fill("createdAt", stamp);
  fill("lastModifiedBy", kUnknownActor);
  fill("lastModifiedByType", "Application");
  fill("lastModifiedAt", stamp);
  return out;
}

api::ValidationErrors NameErrors(const arm::ResourceId& id) {
  api::ValidationErrors out;
  auto check = [&](const std::string& name, size_t max, bool valid) {
    if (name.size() > max) {
      out.errors.push_back({std::string(api::kInvalidRequestContent),
                            "Too long: may not be more than " + std::to_string(max) + " bytes", "id"});
    }
    if (!valid) {
      out.errors.push_back({std::string(api::kInvalidRequestContent),
                            "Invalid value: " + json::serialize(json::value(name.substr(0, 256))) +
                                ": (must be a valid DNS RFC 1035 label)",
                            "id"});
    }
  };
  check(id.cluster_name, 54, arm::IsValidClusterName(id.cluster_name));
  if (id.kind != arm::ResourceKind::kCluster) check(id.child_name, 15, arm::IsValidChildName(id.child_name));
  return out;
}

arm::CloudError FromValidation(const api::ValidationErrors& errors) {
  std::vector<arm::CloudErrorBody> problems;
  for (const auto& e : errors.errors) {
    problems.push_back(
        {e.code.empty() ? std::string(arm::codes::kInvalidRequestContent) : e.code, e.message, e.target, {}});
  }
  if (problems.empty()) {
    problems.push_back(
        {std::string(arm::codes::kInvalidRequestContent), "The request content was invalid.", "", {}});
  }
  if (problems.size() == 1) return arm::CloudError::FromProblems(std::move(problems));
  // Several problems: the real service's envelope for a list of field errors.
  arm::CloudError e(400, arm::codes::kMultipleErrorsOccurred,
                    std::to_string(problems.size()) + " errors occurred");
  e.body.details = std::move(problems);
  return e;
}

}  // namespace hcprp::frontend
