// The steps around api::Decode* for PUT and PATCH of clusters, node pools and external auths.
// Private to the frontend.
#pragma once

#include <optional>
#include <string_view>

#include "api/api.h"
#include "api/defaults.h"
#include "arm/cloud_error.h"
#include "arm/resource_id.h"
#include "core/json.h"

namespace hcprp::frontend {

struct RequestContext;
struct LoadedResource;

// The service values of api/defaults.h (group 1), taken from the request: the body with, on a PUT
// of a tracked resource, `location` (the region this deployment serves on a create, the stored
// location on a replace) and, on a cluster create, DefaultManagedResourceGroup when the body has none.
json::value WithServiceValues(const RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
                              std::string_view location, bool create);

// api::ManagedResourceGroupName with a random UUID.
std::string DefaultManagedResourceGroup(std::string_view cluster_name);

// Decode context of a request for `id`: its name, subscription and resource group, whether the
// subscription registered the experimental-features AFEC and, for a child, the parent cluster (whose
// canonical body is kept in `parent_body`, which must outlive the result).
api::DecodeOptions DecodeOptionsFor(const RequestContext& ctx, const arm::ResourceId& id,
                                    const std::optional<LoadedResource>& parent,
                                    std::optional<json::object>& parent_body);

// systemData is completed with the other defaults (api/defaults.h, group 1).
using api::CompleteSystemData;
using api::kUnknownActor;

// The real service's checks of the resource's name (in the ID, target "id"): at most 54 characters
// for a cluster, 15 for a node pool or external auth, and the name pattern. A child is refused when
// its cluster's name is invalid too.
api::ValidationErrors NameErrors(const arm::ResourceId& id);

// The ARM error of a refused body: the problem itself when there is one, else MultipleErrorsOccurred
// ("N errors occurred") with every problem in details.
arm::CloudError FromValidation(const api::ValidationErrors& errors);

}  // namespace hcprp::frontend
