// Every default the service fills into a resource, in the order it is applied.
//
// A body passes three groups of defaults; each pass fills only what is absent (or null) and never
// changes a value the client gave, except the service values of group 1, which the service owns.
//
// 1. Service values, on the wire body of a PUT or PATCH before it is decoded (ApplyServiceValues;
//    the frontend calls it because the values come from the request):
//    a. location: a tracked resource lives in the region this deployment serves (a replace keeps the
//       stored one), whatever the body says; a location of the wrong type is left for the schema to
//       refuse.
//    b. platform.managedResourceGroup of a cluster create: "arohcp-<name>-<UUID>" when absent or
//       empty (ManagedResourceGroupName). It comes before the schema check so that the generated
//       name is validated like a given one.
//    systemData is the envelope's, completed after the decode (CompleteSystemData).
// 2. The stored resource's defaults, on a wire body compared with the stored resource for
//    create-only changes (ApplyComparisonDefaults): the stored side has its defaults, so the request
//    gets them too before the comparison; the result is never stored.
// 3. The canonical body of every decode (ApplyCanonicalDefaults), in this order:
//    a. conversion defaults (conversion.h): what the canonical model requires and the request's
//       api-version could not express (kms.visibility, platform.vnetIntegrationSubnetId, the version
//       profile). First, so that the later passes see a complete canonical shape.
//    b. materialized objects: optional objects a create fills with their defaults when the body
//       leaves them out (cluster network, api, ingress, clusterImageRegistry; node pool
//       platform.osDisk), so that a read shows the values in effect. Before the schema defaults,
//       which only fill objects that are present.
//    c. schema defaults: every `default:` of the canonical (stable) document.
//    d. prose defaults: what the document states in descriptions only (version.channelGroup
//       "stable").
//    e. service defaults: what the real service fills and the document does not say (cluster
//       nodeDrainTimeoutMinutes 0, autoscaling maxPodGracePeriodSeconds 600, maxNodeProvisionTimeSeconds 900,
//       podPriorityThreshold -10; node pool autoRepair true, osDisk sizeGiB 64,
//       diskStorageAccountType Premium_LRS, diskType Managed). Last, so that where the document
//       states a value too, the document's is the one in effect.
//    f. request-dependent: a node pool create without platform.subnetId takes its cluster's
//       (DecodeOptions::parent_cluster; api.cpp InheritClusterSubnet), as the real service fills it.
//    The semantic rules (semantic.h) and the canonical create-only check run after all of them.
//
// All functions are pure and thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "api/api.h"
#include "core/clock.h"
#include "core/json.h"

namespace hcprp::api {

class SchemaSet;

// Group 1: the values the service sets on a request body.
struct ServiceValues {
  // The location a tracked resource gets (1a); empty leaves the body's.
  std::string_view location;
  // Makes the managed resource group of a cluster create (1b); empty on every other request. Called
  // only when the body leaves the group out.
  std::function<std::string()> managed_resource_group;
};
// Sets the values of group 1 into the wire body of a `kind`; a body that is not an object is left
// for the decode to refuse.
void ApplyServiceValues(Kind kind, const ServiceValues& values, json::value& body);

// "arohcp-<the first 45 characters of the cluster name>-<uuid>".
std::string ManagedResourceGroupName(std::string_view cluster_name, std::string_view uuid);

// Who systemData names when ARM sent none.
inline constexpr std::string_view kUnknownActor = "Unknown-ARO-HCP-frontend";

// systemData with every member the real service fills when ARM did not send it: created* and
// lastModified* by kUnknownActor (type Application) at `now`.
std::optional<json::object> CompleteSystemData(std::optional<json::object> data, TimePoint now);

// Group 2: the stored resource's defaults on a wire body of `wire_schemas`' api-version.
void ApplyComparisonDefaults(const SchemaSet& wire_schemas, Kind kind, json::value& wire);

// Group 3: passes a to e on a canonical body (an object) decoded from `api_version`.
void ApplyCanonicalDefaults(std::string_view api_version, Kind kind, json::value& canonical);

}  // namespace hcprp::api
