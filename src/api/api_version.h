// The api-versions the service serves, oldest first, and what each one can express.
//
// Callers ask the table instead of comparing version strings: a feature that appears in one
// api-version stays in every newer one, so each trait is a property of the version, not a list of
// names to keep in sync. The data is constant for the whole program.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcprp::api {

struct ApiVersion {
  std::string_view name;  // "2026-06-30-preview"
  bool stable = false;    // published under stable/ (else preview/)

  // --- Shape of the wire bodies (conversion.h maps them to the canonical model) -------------------
  // version.id is optional, platform.vnetIntegrationSubnetId and kms.visibility do not exist and
  // KMS vaultName sits in kms.activeKey (2024-06-10-preview).
  bool legacy_platform_and_kms = false;
  // etcd.dataEncryption.keyManagementMode may be "PlatformManaged" (through 2025-12-23-preview).
  bool platform_managed_etcd = false;
  // An external auth reports one `condition` instead of status.conditions (through 2025-12-23-preview).
  bool external_auth_single_condition = false;
  // A cluster's nodeDrainTimeoutMinutes and a node pool's replicas of 0 (their defaults) are left out
  // of a response, as the real service shows them (2024-06-10-preview); later versions always show them.
  bool hides_zero_counts = false;

  // --- Behaviour -----------------------------------------------------------------------------------
  // Clusters, node pools and external auths report read-only status.conditions (2026-06-30-preview on).
  bool status_conditions = false;
  // requestAdminCredential takes a body {"certificateSigningRequest": PEM} (2026-09-01-preview on).
  bool credential_request_takes_csr = false;
  // Clusters and node pools report status.activeVersions (2026-10-01).
  bool status_active_versions = false;
};

// Every served api-version, oldest first.
std::span<const ApiVersion> ApiVersions();
// The entry of `name`, or nullptr when the version is not served.
const ApiVersion* FindApiVersion(std::string_view name);

bool IsSupportedVersion(std::string_view api_version);
// The names of ApiVersions(), oldest first.
std::vector<std::string> SupportedVersions();
// "2026-10-01, 2026-09-01-preview, ..." (newest first), for error messages.
std::string SupportedVersionsText();

}  // namespace hcprp::api
