#include "api/api_version.h"

#include <array>

namespace hcprp::api {
namespace {

constexpr std::array<ApiVersion, 5> kVersions = {{
    {.name = "2024-06-10-preview",
     .legacy_platform_and_kms = true,
     .platform_managed_etcd = true,
     .external_auth_single_condition = true,
     .hides_zero_counts = true},
    {.name = "2025-12-23-preview", .platform_managed_etcd = true, .external_auth_single_condition = true},
    {.name = "2026-06-30-preview", .status_conditions = true},
    {.name = "2026-09-01-preview", .status_conditions = true, .credential_request_takes_csr = true},
    {.name = "2026-10-01",
     .stable = true,
     .status_conditions = true,
     .credential_request_takes_csr = true,
     .status_active_versions = true},
}};

}  // namespace

std::span<const ApiVersion> ApiVersions() { return kVersions; }

const ApiVersion* FindApiVersion(std::string_view name) {
  for (const ApiVersion& v : kVersions) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

bool IsSupportedVersion(std::string_view api_version) { return FindApiVersion(api_version) != nullptr; }

std::vector<std::string> SupportedVersions() {
  std::vector<std::string> out;
  for (const ApiVersion& v : kVersions) out.emplace_back(v.name);
  return out;
}

std::string SupportedVersionsText() {
  std::string out;
  for (size_t i = kVersions.size(); i-- > 0;) {  // newest first
    if (!out.empty()) out += ", ";
    out.append(kVersions[i].name);
  }
  return out;
}

}  // namespace hcprp::api
