// Conversion between the wire bodies of each api-version and the canonical (2026-10-01) shape.
// Both sides are envelope-less bodies: {"location", "tags", "identity", "properties"}. What a version
// spells differently is driven by its ApiVersion traits (api_version.h); what it does not declare
// is pruned by its schema on the way out and kept from the stored resource on the way in (api.cpp).
//
// wire -> canonical:
// - platform_managed_etcd (2024-06-10-preview, 2025-12-23-preview): etcd.dataEncryption with
//   keyManagementMode "PlatformManaged" (those versions' default, absent from later ones) is
//   dropped: later versions say platform-managed keys are used when dataEncryption is absent.
// - legacy_platform_and_kms (2024-06-10-preview): kms.activeKey.vaultName moves to kms.vaultName;
//   kms.visibility, which later versions require, becomes "Public" (the key vault's default network
//   setting); platform.vnetIntegrationSubnetId, required later, is the cluster subnet
//   (platform.subnetId): such clusters integrate the API server with the cluster subnet. version.id,
//   optional in that document, has no default: the service requires it in every version.
// - external_auth_single_condition (up to 2025-12-23-preview): the external auth's `condition`
//   becomes status.conditions[0], its free-text reason made CamelCase as Condition.reason requires.
// canonical -> wire:
// - platform_managed_etcd: a cluster without etcd.dataEncryption shows keyManagementMode
//   "PlatformManaged", those versions' default;
// - kms.vaultName moves back into kms.activeKey; status.conditions[0] of an external auth becomes
//   the single `condition`; everything else the version does not describe is pruned by its schema.
// Defaults the canonical model has and older versions lack (ingress.type "Public",
// cryptoRestrictions "None", kms.keyVaultType "KeyVault") are the canonical schema's defaults.
#pragma once

#include <string_view>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {

class SchemaSet;

// Structural conversion only (renames, drops); values may be of any type.
json::object WireToCanonical(std::string_view api_version, Kind kind, json::object wire);

// Fills what stable requires and `api_version` could not express (kms.visibility,
// platform.vnetIntegrationSubnetId, an empty version profile). Runs after a replace has taken over the
// existing values.
void ApplyConversionDefaults(std::string_view api_version, Kind kind, json::object& canonical);

// `canonical` may carry observed read-only values. The result holds only what `schemas` describes.
json::object CanonicalToWire(const SchemaSet& schemas, Kind kind, json::object canonical);

// RFC 7396 merge patch of `patch` into `target`.
void MergePatch(json::value& target, const json::value& patch);

// Recursively copies into `dst` the members of `src` that `dst` lacks.
void MergeMissing(json::object& dst, const json::object& src);

}  // namespace hcprp::api
