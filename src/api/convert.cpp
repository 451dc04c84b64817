#include "api/conversion.h"

#include "api/schema.h"

namespace hcprp::api {
namespace {

json::object* ChildObject(json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end()) return nullptr;
  return it->value().if_object();
}

json::object& EnsureObject(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object();
  return v.get_object();
}

bool IsPreview(std::string_view api_version) { return api_version == kPreviewVersion; }

json::object* KmsOf(json::object& props) {
  json::object* etcd = ChildObject(props, "etcd");
  json::object* enc = etcd ? ChildObject(*etcd, "dataEncryption") : nullptr;
  json::object* cm = enc ? ChildObject(*enc, "customerManaged") : nullptr;
  return cm ? ChildObject(*cm, "kms") : nullptr;
}

void PreviewClusterToCanonical(json::object& props) {
  if (json::object* etcd = ChildObject(props, "etcd")) {
    if (json::object* enc = ChildObject(*etcd, "dataEncryption")) {
      auto mode = GetString(*enc, "keyManagementMode");
      if (!mode || *mode == "PlatformManaged") {
        etcd->erase("dataEncryption");
      } else if (json::object* kms = KmsOf(props)) {
        // Copy before inserting: an insertion may move the members (and `key`) in memory.
        json::value vault;
        if (json::object* key = ChildObject(*kms, "activeKey")) {
          if (auto it = key->find("vaultName"); it != key->end()) {
            vault = it->value();
            key->erase(it);
          }
        }
        if (!vault.is_null()) (*kms)["vaultName"] = std::move(vault);
      }
    }
    if (etcd->empty()) props.erase("etcd");
  }
}

void CanonicalClusterToPreview(json::object& props) {
  json::object* kms = KmsOf(props);
  if (kms == nullptr) return;
  if (auto it = kms->find("vaultName"); it != kms->end()) {
    json::value name = it->value();
    kms->erase(it);
    if (json::object* key = ChildObject(*kms, "activeKey")) (*key)["vaultName"] = std::move(name);
  }
}

void CanonicalExternalAuthToPreview(json::object& props) {
  json::object* status = ChildObject(props, "status");
  if (status == nullptr) return;
  json::value first;
  if (const json::array* conditions = GetArray(*status, "conditions"); conditions && !conditions->empty()) {
    first = conditions->front();
  }
  props.erase("status");
  if (!first.is_null()) props["condition"] = std::move(first);
}

}  // namespace

json::object WireToCanonical(std::string_view api_version, Kind kind, json::object wire) {
  if (!IsPreview(api_version)) return wire;
  json::object& props = EnsureObject(wire, "properties");
  switch (kind) {
    case Kind::kCluster:
      PreviewClusterToCanonical(props);
      break;
    case Kind::kNodePool:
      break;
    case Kind::kExternalAuth:
      if (json::object* observed = ChildObject(props, "condition")) {
        json::object status;
        status["conditions"] = json::array{*observed};
        props.erase("condition");
        props["status"] = std::move(status);
      }
      break;
  }
  return wire;
}

void ApplyConversionDefaults(std::string_view api_version, Kind kind, json::object& canonical,
                             std::string_view default_version_id) {
  if (!IsPreview(api_version) || kind == Kind::kExternalAuth) return;
  json::object& props = EnsureObject(canonical, "properties");
  json::object& version = EnsureObject(props, "version");
  if (!version.contains("id")) version["id"] = default_version_id;
  if (kind != Kind::kCluster) return;
  if (json::object* kms = KmsOf(props); kms != nullptr && !kms->contains("visibility")) {
    (*kms)["visibility"] = "Public";
  }
  if (json::object* platform = ChildObject(props, "platform")) {
    if (!platform->contains("vnetIntegrationSubnetId")) {
      if (auto it = platform->find("subnetId"); it != platform->end()) {
        json::value subnet = it->value();  // the insertion below may move `it`
        (*platform)["vnetIntegrationSubnetId"] = std::move(subnet);
      }
    }
  }
}

json::object CanonicalToWire(const SchemaSet& schemas, Kind kind, json::object canonical) {
  if (IsPreview(schemas.api_version())) {
    json::object& props = EnsureObject(canonical, "properties");
    if (kind == Kind::kCluster) CanonicalClusterToPreview(props);
    if (kind == Kind::kExternalAuth) CanonicalExternalAuthToPreview(props);
  }
  json::value v = std::move(canonical);
  schemas.Prune(DefinitionName(kind), v);
  return std::move(v.get_object());
}

void MergePatch(json::value& target, const json::value& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  json::object& t = target.get_object();
  for (const auto& member : patch.get_object()) {
    if (member.value().is_null()) {
      t.erase(member.key());
    } else {
      MergePatch(t[member.key()], member.value());
    }
  }
}

void MergeMissing(json::object& dst, const json::object& src) {
  for (const auto& member : src) {
    auto it = dst.find(member.key());
    if (it == dst.end()) {
      dst[member.key()] = member.value();
    } else if (it->value().is_object() && member.value().is_object()) {
      MergeMissing(it->value().get_object(), member.value().get_object());
    }
  }
}

}  // namespace hcprp::api
