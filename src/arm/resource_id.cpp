#include "arm/resource_id.h"

#include "arm/documents.h"
#include "core/azure_resource_id.h"
#include "core/json.h"
#include "core/uuid.h"

namespace hcprp::arm {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }

// ^[a-zA-Z]([-a-zA-Z0-9]{0,max_middle}[a-zA-Z0-9])?$
bool MatchesDnsLikeName(std::string_view s, size_t max_middle) {
  if (s.empty() || s.size() > max_middle + 2) return false;
  if (!IsAlpha(s.front())) return false;
  if (s.size() == 1) return true;
  if (!IsAlnum(s.back())) return false;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (!IsAlnum(s[i]) && s[i] != '-') return false;
  }
  return true;
}

}  // namespace

std::string_view ArmType(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kCluster:
      return kClusterType;
    case ResourceKind::kNodePool:
      return kNodePoolType;
    case ResourceKind::kExternalAuth:
      return kExternalAuthType;
  }
  return kClusterType;
}

std::string_view DocType(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kCluster:
      return kClusterDocType;
    case ResourceKind::kNodePool:
      return kNodePoolDocType;
    case ResourceKind::kExternalAuth:
      return kExternalAuthDocType;
  }
  return "";
}

std::string_view ChildSegment(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kNodePool:
      return "nodePools";
    case ResourceKind::kExternalAuth:
      return "externalAuths";
    case ResourceKind::kCluster:
      break;
  }
  return "";
}

std::string ResourceId::ToString() const {
  std::string s = "/subscriptions/" + subscription_id + "/resourceGroups/" + resource_group + "/providers/" +
                  std::string(kProviderNamespace) + "/hcpOpenShiftClusters/" + cluster_name;
  if (kind != ResourceKind::kCluster) {
    s += "/";
    s += ChildSegment(kind);
    s += "/" + child_name;
  }
  return s;
}

ResourceId ResourceId::Cluster() const {
  ResourceId c = *this;
  c.kind = ResourceKind::kCluster;
  c.child_name.clear();
  return c;
}

Result<ResourceId> ParseResourceId(std::string_view id) {
  auto bad = [&] {
    return Error::InvalidArgument("'" + std::string(id) + "' is not a supported resource ID");
  };
  // The general parse ignores a trailing '/'; an ID of ours never has one.
  if (id.empty() || id.back() == '/') return bad();
  AzureResourceId parts;
  if (!ParseAzureResourceId(id, parts).ok()) return bad();
  if (parts.resource_group.empty() || !EqualsIgnoreCase(parts.provider_namespace, kProviderNamespace) ||
      parts.resources.empty() || parts.resources.size() > 2 ||
      !EqualsIgnoreCase(parts.resources[0].type, "hcpOpenShiftClusters")) {
    return bad();
  }
  ResourceId r;
  if (parts.resources.size() == 2) {
    const std::string_view child = parts.resources[1].type;
    if (EqualsIgnoreCase(child, "nodePools")) {
      r.kind = ResourceKind::kNodePool;
    } else if (EqualsIgnoreCase(child, "externalAuths")) {
      r.kind = ResourceKind::kExternalAuth;
    } else {
      return bad();
    }
    r.child_name = std::string(parts.resources[1].name);
  }
  r.subscription_id = std::string(parts.subscription);
  r.resource_group = std::string(parts.resource_group);
  r.cluster_name = std::string(parts.resources[0].name);
  return r;
}

std::string_view LastSegment(std::string_view id) {
  auto pos = id.rfind('/');
  return pos == std::string_view::npos ? id : id.substr(pos + 1);
}

bool IsValidSubscriptionId(std::string_view s) { return IsUuid(s); }

bool IsValidResourceGroupName(std::string_view s) {
  if (s.empty() || s.size() > 90 || s.back() == '.') return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.' && c != '(' && c != ')') return false;
  }
  return true;
}

bool IsValidClusterName(std::string_view s) { return MatchesDnsLikeName(s, 52); }
bool IsValidChildName(std::string_view s) { return MatchesDnsLikeName(s, 13); }

bool IsValidLocation(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!IsAlnum(c)) return false;
  }
  return true;
}

bool IsValidVersionName(std::string_view s) {
  if (s.size() < 3 || s.size() > 24) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

}  // namespace hcprp::arm
