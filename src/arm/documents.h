// The documents hcprp keeps in the "resources" container of the store (docs/architecture.md, "Data
// model"), with
// their conversion to and from the stored JSON body. Frontend and backend share these types.
//
// Every body has the envelope {"resourceType": <lower-cased type>, "properties": {...}}; the store
// keeps id, partitionKey, etag and ttl outside the body. Partition key = lower-cased subscription ID.
//
//   resource document   id = ResourceDocumentId(resource ID) (a UUIDv5 of the lower-cased ID, so two
//                       concurrent creates of one resource collide in the store)
//   operation document  id = the operation ID (a UUIDv4), ttl = 7 days by default
//   subscription doc    id = lower-cased subscription ID, properties = the ARM subscription PUT body
//
// All types are plain values; FromBody never throws and rejects bodies of another resourceType.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/json.h"
#include "core/result.h"

namespace hcprp::arm {

// Lower-cased resource types used as the "resourceType" of documents.
inline constexpr std::string_view kClusterDocType = "microsoft.redhatopenshift/hcpopenshiftclusters";
inline constexpr std::string_view kNodePoolDocType =
    "microsoft.redhatopenshift/hcpopenshiftclusters/nodepools";
inline constexpr std::string_view kExternalAuthDocType =
    "microsoft.redhatopenshift/hcpopenshiftclusters/externalauths";
inline constexpr std::string_view kOperationDocType = "microsoft.redhatopenshift/hcpoperationsstatus";
inline constexpr std::string_view kSubscriptionDocType = "microsoft.resources/subscriptions";

// Default lifetime of operation documents: 7 days.
inline constexpr int64_t kDefaultOperationTtlSeconds = 604800;

// The store document id of the resource with this ARM resource ID (any casing).
std::string ResourceDocumentId(std::string_view resource_id);
// The partition key of a subscription (lower-cased subscription ID).
std::string PartitionKey(std::string_view subscription_id);

// ---------------------------------------------------------------------------------------------
// Provisioning states / operation statuses.

inline constexpr std::string_view kStateAccepted = "Accepted";
inline constexpr std::string_view kStateProvisioning = "Provisioning";
inline constexpr std::string_view kStateUpdating = "Updating";
inline constexpr std::string_view kStateDeleting = "Deleting";
inline constexpr std::string_view kStateSucceeded = "Succeeded";
inline constexpr std::string_view kStateFailed = "Failed";
inline constexpr std::string_view kStateCanceled = "Canceled";

// The states that end an operation or a provisioning: the one list of them.
inline constexpr std::array<std::string_view, 3> kTerminalStates = {kStateSucceeded, kStateFailed,
                                                                    kStateCanceled};
// One of kTerminalStates (case-insensitive).
bool IsTerminalState(std::string_view state);

// ---------------------------------------------------------------------------------------------
// Error carried by a failed or canceled operation (OData error, as in the ARM status resource).
struct OperationError {
  std::string code;
  std::string message;
  std::string target;   // optional
  json::array details;  // optional, each {"code","message","target"}

  json::object ToJson() const;
  static OperationError FromJson(const json::object& o);
};

inline constexpr std::string_view kCanceledCode = "Canceled";
inline constexpr std::string_view kSupersededMessage = "This operation was superseded by another";

// ---------------------------------------------------------------------------------------------
// A cluster, node pool or external auth.
struct ResourceDocument {
  std::string resource_type;  // one of the k*DocType above
  std::string resource_id;    // ARM resource ID, casing of the creating PUT
  std::string internal_id;    // Cluster Service href; empty until known
  std::string location;       // Azure location (children: their cluster's)
  std::optional<std::string> active_operation_id;
  std::string provisioning_state;           // status of the latest PUT/PATCH/DELETE operation
  std::optional<json::object> identity;     // managed service identity as given
  std::optional<json::object> system_data;  // last x-ms-arm-resource-system-data, merged
  json::object tags;
  json::object resource;        // api::ToStorage() of the canonical resource
  json::object service_status;  // Cluster Service status fields the backend syncs

  json::value ToBody() const;
  static Result<ResourceDocument> FromBody(const json::value& body);
  // The same, moving the large members (resource, identity, systemData, tags) out of `body`.
  static Result<ResourceDocument> FromBody(json::value&& body);
};

// Body field paths, for store patches and conditions.
inline constexpr std::string_view kPathActiveOperationId = "/properties/activeOperationId";
inline constexpr std::string_view kPathProvisioningState = "/properties/provisioningState";
inline constexpr std::string_view kPathInternalId = "/properties/internalId";
inline constexpr std::string_view kPathServiceStatus = "/properties/clusterServiceStatus";
// On a cluster: the create operation of its newest child. Written by every child create, conditioned
// on the cluster's etag, so that a child create and the cluster's DELETE (conditioned on the etag it
// read before it looked for children) cannot both commit on what the other has not seen.
inline constexpr std::string_view kPathLastChildCreate = "/properties/lastChildCreate";
// The read-only values the Cluster Service assigned (api::Resource::observed inside the stored resource).
inline constexpr std::string_view kPathObserved = "/properties/resource/observed";

// ---------------------------------------------------------------------------------------------
// The request an operation carries out.
enum class OperationRequest { kCreate, kUpdate, kDelete, kRequestCredential, kRevokeCredentials };
std::string_view OperationRequestName(OperationRequest r);
Result<OperationRequest> ParseOperationRequest(std::string_view name);

// An asynchronous operation (resourceType microsoft.redhatopenshift/hcpoperationsstatus).
struct OperationDocument {
  std::string id;         // the operation ID (not part of the body: the store id)
  std::string tenant_id;  // exposed operations only (x-ms-home-tenant-id)
  std::string client_id;  // exposed operations only (x-ms-client-object-id)
  OperationRequest request = OperationRequest::kCreate;
  std::string external_id;       // ARM resource ID the operation acts on
  std::string internal_id;       // Cluster Service href (for credentials: the credential's)
  std::string operation_id;      // status endpoint path; exposed operations only
  std::string notification_uri;  // Azure-AsyncNotificationUri, if ARM gave one
  std::string location;          // Azure location of the resource (for status URLs)
  TimePoint start_time{};
  TimePoint last_transition_time{};
  std::string status;  // see provisioning states
  std::optional<OperationError> error;
  // An update whose Cluster Service request the frontend has not confirmed yet: until then the
  // Cluster Service state says nothing about it (a "ready" is the state before the update).
  bool awaiting_cluster_service = false;
  // The time the operation has before the backend fails it, when the resource sets its own (an
  // experimental deadline, api/experimental.h); otherwise the backend's default for the request.
  std::optional<int64_t> deadline_seconds;

  bool exposed() const { return !operation_id.empty(); }

  // Body {"resourceType","properties"}; `id` is not stored in the body.
  json::value ToBody() const;
  static Result<OperationDocument> FromBody(std::string id, const json::value& body);
};

// A notification owed to Azure-AsyncNotificationUri for an operation that ended. Written in the same
// batch that ends the operation (by the backend, or by the frontend when a delete cancels one) and
// deleted once the notification was delivered or given up, so that a backend that restarts, or the
// one that takes the partition over, still delivers it. Id: PendingNotificationId(operation id).
inline constexpr std::string_view kPendingNotificationDocType = "hcprp/pendingnotifications";
inline constexpr int64_t kPendingNotificationTtlSeconds = int64_t{2} * 24 * 3600;
std::string PendingNotificationId(std::string_view operation_id);
// {"resourceType", "properties": {"operationId", "uri"}}
json::value PendingNotificationBody(std::string_view operation_id, std::string_view uri);

inline constexpr std::string_view kPathStatus = "/properties/status";
inline constexpr std::string_view kPathAwaitingClusterService = "/properties/awaitingClusterService";
inline constexpr std::string_view kPathError = "/properties/error";
inline constexpr std::string_view kPathLastTransitionTime = "/properties/lastTransitionTime";
inline constexpr std::string_view kPathOperationInternalId = "/properties/internalId";

// ---------------------------------------------------------------------------------------------
// ARM subscription lifecycle states.
enum class SubscriptionState { kRegistered, kUnregistered, kWarned, kSuspended, kDeleted };
std::string_view SubscriptionStateName(SubscriptionState s);
Result<SubscriptionState> ParseSubscriptionState(std::string_view name);  // case-insensitive

struct SubscriptionDocument {
  std::string id;                                            // lower-cased subscription ID (store id)
  json::object properties;                                   // the subscription PUT body verbatim
  SubscriptionState state = SubscriptionState::kRegistered;  // parsed from properties.state

  std::optional<std::string> tenant_id() const;  // properties.properties.tenantId
  // Whether properties.properties.registeredFeatures lists `feature` (its name compared
  // case-insensitively, as ARM names features) with state "Registered".
  bool HasRegisteredFeature(std::string_view feature) const;

  json::value ToBody() const;
  static Result<SubscriptionDocument> FromBody(std::string id, const json::value& body);
  // The same, moving the properties out of `body`.
  static Result<SubscriptionDocument> FromBody(std::string id, json::value&& body);
};

}  // namespace hcprp::arm
