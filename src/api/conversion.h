// Conversion between the wire bodies of each api-version and the canonical (2026-10-01) shape.
// Both sides are envelope-less bodies: {"location", "tags", "identity", "properties"}.
//
// 2024-06-10-preview -> canonical:
// - etcd.dataEncryption with keyManagementMode "PlatformManaged" (preview's default, absent from
//   stable) is dropped: stable says platform-managed keys are used when dataEncryption is absent.
// - etcd...kms.activeKey.vaultName moves to kms.vaultName; kms.visibility, which stable requires
//   and preview cannot express, becomes "Public" (the key vault's default network setting).
// - platform.vnetIntegrationSubnetId, required by stable, is the cluster subnet (platform.subnetId):
//   preview clusters integrate the API server with the cluster subnet.
// - version.id, required by stable and optional in preview, gets the caller's default.
// canonical -> 2024-06-10-preview:
// - kms.vaultName moves back into kms.activeKey; status.conditions[0] of an external auth becomes
//   the single `condition`; everything else preview does not describe is pruned by its schema.
#pragma once

#include <string_view>

#include "api/api.h"
#include "core/json.h"

namespace hcprp::api {

class SchemaSet;

// Structural conversion only (renames, drops); values may be of any type.
json::object WireToCanonical(std::string_view api_version, Kind kind, json::object wire);

// Fills what stable requires and `api_version` could not express (version.id, kms.visibility,
// platform.vnetIntegrationSubnetId). Runs after a replace has taken over the existing values.
void ApplyConversionDefaults(std::string_view api_version, Kind kind, json::object& canonical,
                             std::string_view default_version_id);

// `canonical` may carry observed read-only values. The result holds only what `schemas` describes.
json::object CanonicalToWire(const SchemaSet& schemas, Kind kind, json::object canonical);

// RFC 7396 merge patch of `patch` into `target`.
void MergePatch(json::value& target, const json::value& patch);

// Recursively copies into `dst` the members of `src` that `dst` lacks.
void MergeMissing(json::object& dst, const json::object& src);

}  // namespace hcprp::api
