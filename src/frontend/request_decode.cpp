// What a PUT or PATCH body becomes before and after api::Decode*: the service values of
// api/defaults.h taken from the request, the decode context, and the ARM error of a refused body.
#include "frontend/request_decode.h"
#include "api/experimental.h"
#include "core/uuid.h"
#include "frontend/internal.h"

namespace hcprp::frontend {

json::value WithServiceValues(const RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
                              std::string_view location, bool create) {
  api::ServiceValues values;
  if (ctx.method == bhttp::verb::put) values.location = location;
  if (create) values.managed_resource_group = [&id] { return DefaultManagedResourceGroup(id.Name()); };
  json::value out = body;
  api::ApplyServiceValues(ToApiKind(id.kind), values, out);
  return out;
}

std::string DefaultManagedResourceGroup(std::string_view cluster_name) {
  return api::ManagedResourceGroupName(cluster_name, NewUuidV4());
}

api::DecodeOptions DecodeOptionsFor(const RequestContext& ctx, const arm::ResourceId& id,
                                    const std::optional<LoadedResource>& parent,
                                    std::optional<json::object>& parent_body) {
  api::DecodeOptions opts;
  opts.name = id.Name();
  opts.resource_id = id.ToString();
  opts.subscription_id = id.subscription_id;
  opts.resource_group = id.resource_group;
  opts.experimental_release_features =
      ctx.subscription && ctx.subscription->HasRegisteredFeature(api::kExperimentalReleaseFeatures);
  if (parent) {
    if (auto stored = api::FromStorage(parent->doc.resource); stored.ok()) {
      parent_body = json::object{{"properties", stored->properties}};
      opts.parent_cluster = &*parent_body;
    }
    if (const json::array* history = GetArray(parent->doc.service_status, "version_history")) {
      for (const json::value& v : clusterservice::ActiveVersions(*history)) {
        if (auto version = GetString(v.as_object(), "version"))
          opts.control_plane_versions.emplace_back(*version);
      }
    }
  }
  return opts;
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
