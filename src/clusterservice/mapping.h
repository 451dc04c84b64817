// The one mapping between the ARM model and Cluster Service (OCM aro_hcp v1alpha1) objects: collection
// hrefs, create and update bodies, and the read-only values the Cluster Service assigns. The
// conversions themselves live in convert.h; this file decides which one a kind uses and what Azure
// context it gets, so that neither the frontend's handlers nor the backend's create recovery see OCM
// field names, and both send the same bodies.
#pragma once

#include <string>
#include <string_view>

#include "api/api.h"
#include "arm/documents.h"
#include "arm/resource_id.h"
#include "clusterservice/event.h"
#include "core/json.h"
#include "core/result.h"

namespace hcprp::clusterservice {

// The Cluster Service collection a new resource of `kind` is POSTed to. `parent_internal_id` is the
// cluster's href (ignored for clusters).
std::string ClusterServiceCollection(arm::ResourceKind kind, std::string_view parent_internal_id);

// The OCM object to POST for the resource `id` (clusters: name, region, azure.*, version, network,
// ...; node pools and external auths: their own shapes). `tenant_id` is the subscription's tenant
// (clusters only; may be empty). Fails only for an ID that is not a cluster or child resource ID.
Result<json::object> BuildClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource,
                                                   std::string_view tenant_id = "");
// As above for callers that always hold a well-formed ID (a parsed arm::ResourceId is one): an
// empty object when the conversion fails, which the Cluster Service refuses.
json::object ClusterServiceCreateBody(const arm::ResourceId& id, const api::Resource& resource,
                                      std::string_view tenant_id = "");
// The OCM patch after a PUT or PATCH: only the fields the Cluster Service lets change.
json::object ClusterServiceUpdateBody(const arm::ResourceId& id, const api::Resource& resource);

// Whether `object` (a Cluster Service object as read) already holds `patch` (a ClusterServiceUpdateBody):
// applying the patch as the Cluster Service applies it would change nothing. Members are compared as
// a JSON merge patch (a null removes, an object merges), a cluster's "properties" as a whole (the
// Cluster Service replaces them), and a version ID that names only a minor ("openshift-v4.20") as held
// by any release of that minor (the Cluster Service pins it to one). What tells the backend whether an
// update the frontend recorded reached the Cluster Service.
bool ObjectHoldsUpdate(const json::object& object, const json::object& patch);

// The read-only values the Cluster Service assigned to `cs_object` (the answer to a create, update
// or GET), in the canonical shape of api::Resource::observed: clusters {api.url, console.url,
// dns.baseDomain, platform.issuerUrl}; empty for other kinds and for objects without them.
json::object ObservedFromClusterService(arm::ResourceKind kind, const json::object& cs_object);
// The same, of an object already parsed.
json::object ObservedFromClusterService(arm::ResourceKind kind, const ServiceObject& object);

// The Cluster Service create request of a stored resource: what the frontend POSTs when it accepts a
// create, and what the backend POSTs again (with the operation ID as idempotency key) when the
// frontend stopped before recording the internal ID. `parent_internal_id` is the cluster's href for
// node pools and external auths (kUnavailable while it is empty); `tenant_id` the subscription's.
struct CreateRequest {
  std::string collection_href;  // e.g. /api/aro_hcp/v1alpha1/clusters
  json::object body;
};
Result<CreateRequest> CreateRequestFor(const arm::ResourceDocument& doc, std::string_view parent_internal_id,
                                       std::string_view tenant_id);

// The Cluster Service update of a stored resource: the patch the frontend sent for the resource the
// document holds (ClusterServiceUpdateBody), which the backend sends again when the frontend stopped
// before confirming it.
Result<json::object> UpdateRequestFor(const arm::ResourceDocument& doc);

// `text` as a string literal of the Cluster Service's search language: single-quoted, a quote doubled.
std::string SearchLiteral(std::string_view text);
// The search that lists the objects made for the ARM resource `id` within its collection
// (ClusterServiceCollection): a cluster by the Azure names it carries, a child by its name.
std::string SearchForResource(const arm::ResourceId& id);

// Cluster Service action names.
inline constexpr std::string_view kCsRequestCredential = "request_admin_credential";
inline constexpr std::string_view kCsRevokeCredentials = "revoke_credentials";

}  // namespace hcprp::clusterservice
