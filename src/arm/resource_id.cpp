#include "arm/resource_id.h"

#include <vector>

#include "arm/documents.h"
#include "core/json.h"
#include "core/uuid.h"

namespace hcprp::arm {
namespace {

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

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
  if (id.empty() || id.front() != '/') return bad();
  auto seg = Split(id.substr(1));
  if (seg.size() != 8 && seg.size() != 10) return bad();
  if (!EqualsIgnoreCase(seg[0], "subscriptions") || !EqualsIgnoreCase(seg[2], "resourceGroups") ||
      !EqualsIgnoreCase(seg[4], "providers") || !EqualsIgnoreCase(seg[5], kProviderNamespace) ||
      !EqualsIgnoreCase(seg[6], "hcpOpenShiftClusters")) {
    return bad();
  }
  ResourceId r;
  r.subscription_id = std::string(seg[1]);
  r.resource_group = std::string(seg[3]);
  r.cluster_name = std::string(seg[7]);
  if (seg.size() == 10) {
    if (EqualsIgnoreCase(seg[8], "nodePools")) {
      r.kind = ResourceKind::kNodePool;
    } else if (EqualsIgnoreCase(seg[8], "externalAuths")) {
      r.kind = ResourceKind::kExternalAuth;
    } else {
      return bad();
    }
    r.child_name = std::string(seg[9]);
  }
  if (r.subscription_id.empty() || r.resource_group.empty() || r.cluster_name.empty() ||
      (r.kind != ResourceKind::kCluster && r.child_name.empty())) {
    return bad();
  }
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
