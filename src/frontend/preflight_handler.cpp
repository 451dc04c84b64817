// POST .../providers/Microsoft.RedHatOpenShift/deployments/{name}/preflight: static validation of the
// resources of a template deployment. ARM's preflight contract answers 200 with {"status":
// "Succeeded"} or {"status": "Failed", "error": {...}}; a body that is not a preflight request is 400.
#include "frontend/internal.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;
using arm::CloudErrorBody;

std::optional<arm::ResourceKind> KindOfType(std::string_view type) {
  if (EqualsIgnoreCase(type, arm::kClusterType)) return arm::ResourceKind::kCluster;
  if (EqualsIgnoreCase(type, arm::kNodePoolType)) return arm::ResourceKind::kNodePool;
  if (EqualsIgnoreCase(type, arm::kExternalAuthType)) return arm::ResourceKind::kExternalAuth;
  return std::nullopt;
}

void Validate(const json::object& r, size_t index, std::vector<CloudErrorBody>& problems) {
  const std::string where = "resources[" + std::to_string(index) + "]";
  auto type = GetString(r, "type");
  if (!type) {
    problems.push_back(
        {std::string(arm::codes::kInvalidRequestContent), "The resource has no type.", where + ".type", {}});
    return;
  }
  auto kind = KindOfType(*type);
  if (!kind) return;  // not ours: other providers validate their resources
  auto version = GetString(r, "apiVersion");
  if (!version || !api::IsSupportedVersion(*version)) {
    problems.push_back({std::string(arm::codes::kInvalidResourceType),
                        "The resource type '" + std::string(*type) +
                            "' could not be found for API version '" + std::string(version.value_or("")) +
                            "'.",
                        where + ".apiVersion",
                        {}});
    return;
  }
  std::string name(GetString(r, "name").value_or(""));
  std::string leaf = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  bool name_ok =
      *kind == arm::ResourceKind::kCluster ? arm::IsValidClusterName(name) : arm::IsValidChildName(leaf);
  if (!name_ok) {
    problems.push_back({std::string(arm::codes::kInvalidResourceName),
                        "The resource name '" + name + "' is invalid.",
                        where + ".name",
                        {}});
    return;
  }
  json::object body;
  for (auto key : {"location", "tags", "identity", "properties"}) {
    if (const auto* v = r.if_contains(key)) body[key] = *v;
  }
  api::DecodeOptions opts;
  opts.name = leaf;
  // The rules that compare IDs with the cluster's subscription and resource group need its ID.
  if (auto id = GetString(r, "id")) {
    if (auto parsed = arm::ParseResourceId(*id); parsed.ok()) {
      opts.subscription_id = parsed->subscription_id;
      opts.resource_group = parsed->resource_group;
    }
  }
  auto decoded = api::DecodeCreate(*version, ToApiKind(*kind), body, opts);
  if (auto* errs = std::get_if<api::ValidationErrors>(&decoded)) {
    for (const auto& e : errs->errors) {
      problems.push_back({e.code, e.message, e.target.empty() ? where : where + "." + e.target, {}});
    }
  }
}

}  // namespace

Response HandlePreflight(Env& env, RequestContext& ctx) {
  auto parsed = ParseJson(ctx.req->body(), env.options.max_json_depth);
  if (!parsed.ok() || !parsed->is_object()) {
    return ErrorReply(CloudError::InvalidRequestContent(
        "The request content was invalid and could not be deserialized: " +
        (parsed.ok() ? std::string("the body must be a JSON object.") : parsed.error().message())));
  }
  const auto* resources = GetArray(parsed->as_object(), "resources");
  if (resources == nullptr) {
    return ErrorReply(
        CloudError::InvalidRequestContent("The preflight request has no resources array.", "resources"));
  }
  std::vector<CloudErrorBody> problems;
  for (size_t i = 0; i < resources->size(); ++i) {
    const auto& r = (*resources)[i];
    if (!r.is_object()) {
      problems.push_back({std::string(arm::codes::kInvalidRequestContent),
                          "The resource is not an object.",
                          "resources[" + std::to_string(i) + "]",
                          {}});
      continue;
    }
    Validate(r.as_object(), i, problems);
  }
  json::object out;
  if (problems.empty()) {
    out["status"] = "Succeeded";
  } else {
    out["status"] = "Failed";
    out["error"] = CloudError::FromProblems(std::move(problems)).body.ToJson();
  }
  return JsonReply(200, out);
}

}  // namespace hcprp::frontend
