// What the backend reads of the resources-container documents (types in arm/documents.h), and the
// few documents it writes itself; the href of a listed Cluster Service object.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "arm/documents.h"
#include "arm/resource_id.h"
#include "clusterservice/client.h"
#include "clusterservice/event.h"
#include "core/clock.h"
#include "core/json.h"
#include "store/store.h"

namespace hcprp::backend {

// The index's view of a non-terminal operation document.
struct OperationRecord {
  std::string partition_key;
  std::string id;
  arm::OperationRequest request = arm::OperationRequest::kCreate;
  std::string request_name;
  std::string status;
  std::string external_id;
  std::string internal_id;  // empty until the Cluster Service object is known
  std::string notification_uri;
  std::optional<TimePoint> start_time;
  bool awaiting_cluster_service = false;    // see arm::OperationDocument
  std::optional<int64_t> deadline_seconds;  // see arm::OperationDocument
};

std::string_view ResourceTypeOf(const json::value& body);
bool IsOperationDocument(const json::value& body);
bool IsSubscriptionDocument(const json::value& body);
// A subscription document in the Deleted state (arm::SubscriptionDocument).
bool IsDeletedSubscription(const store::Document& doc);
// A cluster, node pool or external auth resource document.
bool IsResourceDocument(const json::value& body);

// nullopt when the document is not a (well-formed) operation document.
std::optional<OperationRecord> ParseOperation(const store::Document& doc);

// The Cluster Service href recorded on a resource document (arm::kPathInternalId), "" when none yet.
std::string InternalIdOf(const json::value& resource_body);
// The href of an item of the Cluster Service collection `collection`: its "href", else the collection
// and its "id" ("" when it has neither).
std::string HrefOfListed(const json::object& item, std::string_view collection);
// The ARM resource a Cluster Service object `href` (a cluster, node pool or external auth; `object` as
// listed or from an event) was made for: a cluster's from its azure block; a child's from its name and
// its cluster's object, read from `cs`. nullopt when they do not say (or the cluster cannot be read).
std::optional<arm::ResourceId> ResourceIdOfObject(clusterservice::Client& cs, std::string_view href,
                                                  const clusterservice::ServiceObject& object);

// A pending notification document (arm::PendingNotificationBody); nullopt when it is not well formed.
struct PendingNotification {
  std::string operation_id;
  std::string uri;
};
std::optional<PendingNotification> ParsePendingNotification(const json::value& body);

// The service provider's own record of a Cluster Service cluster, a sibling of its resource document
// in the same partition that only the backend writes and that is never rendered to ARM (the real
// service's ServiceProviderCluster): the control plane's desired z-stream the version controller
// decided (version_controller.h). Keyed by the Cluster Service href, so a cluster deleted and made
// again under the same ARM name starts without one.
//   id = ServiceProviderClusterId(href)
//   {"resourceType": kServiceProviderClusterDocType,
//    "properties": {"internalId": href, "controlPlaneVersion": {"desiredVersion": "4.20.16",
//                   "channelGroup": "fast"}}}
inline constexpr std::string_view kServiceProviderClusterDocType = "hcprp/serviceproviderclusters";
std::string ServiceProviderClusterId(std::string_view href);
struct ServiceProviderCluster {
  std::string href;
  std::string desired_version;  // raw ("4.20.16")
  std::string channel_group;

  json::value ToBody() const;
  // nullopt when the body is not a well-formed service provider cluster document.
  static std::optional<ServiceProviderCluster> FromBody(const json::value& body);
};

// The partition key (lower-cased subscription ID) of a resource ID, by arm::ParseResourceId ("" when
// it is not the ID of a cluster, node pool or external auth).
std::string PartitionOfResourceId(std::string_view resource_id);

// The resource document of `resource_id` in partition `pk` (by its document id, then by a query for
// documents written before ids were derived from resource IDs); nullopt when there is none.
Result<std::optional<store::Document>> FindResource(store::Store& store, std::string_view pk,
                                                    std::string_view resource_id);

// The ARM operation status resource of an operation document, as POSTed to a notification URI.
json::object OperationStatusResource(const store::Document& operation);

}  // namespace hcprp::backend
