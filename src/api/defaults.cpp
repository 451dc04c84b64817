#include "api/defaults.h"

#include <vector>

#include "api/conversion.h"
#include "api/schema.h"
#include "core/time.h"

namespace hcprp::api {
namespace {

// The object at `key` of `parent`, created when absent or null; nullptr when it holds another type.
json::object* Child(json::object* parent, std::string_view key) {
  if (parent == nullptr) return nullptr;
  json::value& v = (*parent)[key];
  if (v.is_null()) v = json::object();
  return v.if_object();
}

void Default(json::object* o, std::string_view key, json::value value) {
  if (o == nullptr) return;
  auto it = o->find(key);
  if (it == o->end() || it->value().is_null()) (*o)[key] = std::move(value);
}

// 1b.
void FillManagedResourceGroup(const std::function<std::string()>& make, json::object& body) {
  json::value* props = body.if_contains("properties");
  json::value* platform = props && props->is_object() ? props->get_object().if_contains("platform") : nullptr;
  if (platform == nullptr || !platform->is_object()) return;
  json::object& p = platform->get_object();
  const json::value* given = p.if_contains("managedResourceGroup");
  if (given == nullptr || given->is_null() || (given->is_string() && given->get_string().empty())) {
    p["managedResourceGroup"] = make();
  }
}

// 3b: the paths of the objects a create fills when the body leaves them out.
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
      cur = Child(cur, key);
      if (cur == nullptr) break;
    }
  }
}

// 3d.
void ProseDefaults(Kind kind, json::object& body) {
  if (kind == Kind::kExternalAuth) return;
  auto props = body.find("properties");
  if (props == body.end() || !props->value().is_object()) return;
  auto v = props->value().get_object().find("version");
  if (v == props->value().get_object().end() || !v->value().is_object()) return;
  json::object& vo = v->value().get_object();
  if (!vo.contains("channelGroup")) vo["channelGroup"] = "stable";
}

// 3e.
void ServiceDefaults(Kind kind, json::object& body) {
  json::object* props = Child(&body, "properties");
  switch (kind) {
    case Kind::kCluster: {
      Default(props, "nodeDrainTimeoutMinutes", json::value(0));
      json::object* scaling = Child(props, "autoscaling");
      Default(scaling, "maxPodGracePeriodSeconds", json::value(600));
      Default(scaling, "maxNodeProvisionTimeSeconds", json::value(900));
      Default(scaling, "podPriorityThreshold", json::value(-10));
      break;
    }
    case Kind::kNodePool: {
      Default(props, "autoRepair", json::value(true));
      Default(props, "replicas", json::value(0));
      json::object* disk = Child(Child(props, "platform"), "osDisk");
      Default(disk, "sizeGiB", json::value(64));
      Default(disk, "diskStorageAccountType", json::value("Premium_LRS"));
      Default(disk, "diskType", json::value("Managed"));
      break;
    }
    case Kind::kExternalAuth:
      break;
  }
}

}  // namespace

void ApplyServiceValues(Kind kind, const ServiceValues& values, json::value& body) {
  json::object* o = body.if_object();
  if (o == nullptr) return;
  if (kind != Kind::kExternalAuth && !values.location.empty()) {
    const json::value* given = o->if_contains("location");
    if (given == nullptr || given->is_null() || given->is_string()) (*o)["location"] = values.location;
  }
  if (kind == Kind::kCluster && values.managed_resource_group) {
    FillManagedResourceGroup(values.managed_resource_group, *o);
  }
}

std::string ManagedResourceGroupName(std::string_view cluster_name, std::string_view uuid) {
  constexpr size_t kMaxNamePart = 45;
  std::string out = "arohcp-";
  out += cluster_name.substr(0, kMaxNamePart);
  out += '-';
  out += uuid;
  return out;
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

void ApplyComparisonDefaults(const SchemaSet& wire_schemas, Kind kind, json::value& wire) {
  if (json::object* o = wire.if_object()) Materialize(kind, *o);
  wire_schemas.ApplyDefaults(DefinitionName(kind), wire);
}

void ApplyCanonicalDefaults(std::string_view api_version, Kind kind, json::value& canonical) {
  json::object& body = canonical.as_object();
  ApplyConversionDefaults(api_version, kind, body);                                       // 3a
  Materialize(kind, body);                                                                // 3b
  SchemaSet::ForVersion(kStableVersion)->ApplyDefaults(DefinitionName(kind), canonical);  // 3c
  ProseDefaults(kind, body);                                                              // 3d
  ServiceDefaults(kind, body);                                                            // 3e
}

}  // namespace hcprp::api
