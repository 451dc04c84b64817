#include "api/conversion.h"

#include <cctype>

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

// The traits of `api_version`; an unknown version converts as the canonical one does (not at all).
const ApiVersion& TraitsOf(std::string_view api_version) {
  static constexpr ApiVersion kCanonical{.name = kStableVersion};
  const ApiVersion* v = FindApiVersion(api_version);
  return v != nullptr ? *v : kCanonical;
}

// The canonical Condition.reason is CamelCase (^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most
// 1024 characters); the single external auth `condition` of older versions allows any text. Words
// are joined with their first letter capitalised: "A good reason" -> "AGoodReason".
std::string CanonicalReason(std::string_view reason) {
  constexpr size_t kMaxReason = 1024;
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ',' || c == ':';
  };
  std::string out;
  bool word_start = true;
  for (char c : reason) {
    if (!allowed(c)) {
      word_start = true;
      continue;
    }
    if (out.empty() && std::isalpha(static_cast<unsigned char>(c)) == 0) continue;
    out += word_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    word_start = false;
  }
  if (out.size() > kMaxReason) out.resize(kMaxReason);
  while (!out.empty() && (out.back() == ',' || out.back() == ':')) out.pop_back();
  return out.empty() ? std::string("Unknown") : out;
}

json::object* KmsOf(json::object& props) {
  json::object* etcd = ChildObject(props, "etcd");
  json::object* enc = etcd ? ChildObject(*etcd, "dataEncryption") : nullptr;
  json::object* cm = enc ? ChildObject(*enc, "customerManaged") : nullptr;
  return cm ? ChildObject(*cm, "kms") : nullptr;
}

void ClusterToCanonical(const ApiVersion& version, json::object& props) {
  if (json::object* etcd = ChildObject(props, "etcd")) {
    if (json::object* enc = ChildObject(*etcd, "dataEncryption")) {
      auto mode = GetString(*enc, "keyManagementMode");
      if (version.platform_managed_etcd && (!mode || *mode == "PlatformManaged")) {
        etcd->erase("dataEncryption");
      } else if (json::object* kms = KmsOf(props); kms != nullptr && version.legacy_platform_and_kms) {
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

// Versions whose etcd encryption defaults to platform-managed keys say so in what they return, as
// the real service does: the canonical model leaves dataEncryption out instead.
void CanonicalClusterToPlatformManagedEtcd(json::object& props) {
  json::object& etcd = EnsureObject(props, "etcd");
  json::object& encryption = EnsureObject(etcd, "dataEncryption");
  if (!encryption.contains("keyManagementMode")) encryption["keyManagementMode"] = "PlatformManaged";
}

void CanonicalClusterToLegacyKms(json::object& props) {
  json::object* kms = KmsOf(props);
  if (kms == nullptr) return;
  if (auto it = kms->find("vaultName"); it != kms->end()) {
    json::value name = it->value();
    kms->erase(it);
    if (json::object* key = ChildObject(*kms, "activeKey")) (*key)["vaultName"] = std::move(name);
  }
}

void CanonicalExternalAuthToSingleCondition(json::object& props) {
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
  const ApiVersion& version = TraitsOf(api_version);
  json::object* props = ChildObject(wire, "properties");
  if (props == nullptr) return wire;
  switch (kind) {
    case Kind::kCluster:
      ClusterToCanonical(version, *props);
      break;
    case Kind::kNodePool:
      break;
    case Kind::kExternalAuth:
      if (!version.external_auth_single_condition) break;
      if (json::object* observed = ChildObject(*props, "condition")) {
        json::object condition = *observed;
        if (auto reason = GetString(condition, "reason")) condition["reason"] = CanonicalReason(*reason);
        props->erase("condition");
        (*props)["status"] = json::object{{"conditions", json::array{std::move(condition)}}};
      }
      break;
  }
  return wire;
}

void ApplyConversionDefaults(std::string_view api_version, Kind kind, json::object& canonical) {
  if (!TraitsOf(api_version).legacy_platform_and_kms || kind == Kind::kExternalAuth) return;
  json::object& props = EnsureObject(canonical, "properties");
  // The version profile is optional in this version's document; the service's model always has one,
  // so a missing version.id is reported there, as the real service reports it.
  EnsureObject(props, "version");
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
  const ApiVersion& version = TraitsOf(schemas.api_version());
  if (json::object* props = ChildObject(canonical, "properties")) {
    if (kind == Kind::kCluster && version.platform_managed_etcd)
      CanonicalClusterToPlatformManagedEtcd(*props);
    if (kind == Kind::kCluster && version.legacy_platform_and_kms) CanonicalClusterToLegacyKms(*props);
    if (kind == Kind::kExternalAuth && version.external_auth_single_condition) {
      CanonicalExternalAuthToSingleCondition(*props);
    }
    if (version.hides_zero_counts) {
      const char* count = kind == Kind::kCluster ? "nodeDrainTimeoutMinutes" : "replicas";
      if (auto it = props->find(count); it != props->end() && it->value() == json::value(0)) props->erase(it);
    }
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
