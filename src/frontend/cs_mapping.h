// The adapter between the ARM model and Cluster Service request bodies. Kept in one file so that a
// full conversion (src/clusterservice/convert.h) can replace this minimal mapping without touching
// the handlers.
#pragma once

#include <string>
#include <string_view>

#include "api/api.h"
#include "arm/resource_id.h"
#include "core/json.h"

namespace hcprp::frontend {

// The Cluster Service collection a new resource of `kind` is POSTed to. `parent_internal_id` is the
// cluster's href (ignored for clusters).
std::string ClusterServiceCollection(arm::ResourceKind kind, std::string_view parent_internal_id);

// Body of the Cluster Service create call for the resource `id`.
json::object ClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource);
// Body of the Cluster Service update (PATCH) call after a PUT or PATCH.
json::object ClusterServiceUpdateBody(const arm::ResourceId& id, const api::Resource& resource);

// Cluster Service action names.
inline constexpr std::string_view kCsRequestCredential = "request_admin_credential";
inline constexpr std::string_view kCsRevokeCredentials = "revoke_credentials";

}  // namespace hcprp::frontend
