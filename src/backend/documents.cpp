#include "backend/documents.h"

#include "arm/operation_status.h"
#include "arm/resource_id.h"
#include "backend/state_mapping.h"

namespace hcprp::backend {

std::string_view ResourceTypeOf(const json::value& body) {
  if (const auto* o = body.if_object()) {
    if (auto t = GetString(*o, "resourceType")) return *t;
  }
  return {};
}

bool IsOperationDocument(const json::value& body) {
  return EqualsIgnoreCase(ResourceTypeOf(body), arm::kOperationDocType);
}

bool IsSubscriptionDocument(const json::value& body) {
  return EqualsIgnoreCase(ResourceTypeOf(body), arm::kSubscriptionDocType);
}

bool IsDeletedSubscription(const store::Document& doc) {
  if (!IsSubscriptionDocument(doc.body)) return false;
  auto subscription = arm::SubscriptionDocument::FromBody(doc.id, doc.body);
  return subscription.ok() && subscription->state == arm::SubscriptionState::kDeleted;
}

bool IsResourceDocument(const json::value& body) {
  std::string_view t = ResourceTypeOf(body);
  return EqualsIgnoreCase(t, arm::kClusterDocType) || EqualsIgnoreCase(t, arm::kNodePoolDocType) ||
         EqualsIgnoreCase(t, arm::kExternalAuthDocType);
}

std::string HrefOfListed(const json::object& item, std::string_view collection) {
  std::string href(GetString(item, "href").value_or(""));
  if (href.empty()) {
    auto id = GetString(item, "id");
    if (id) href = std::string(collection) + "/" + std::string(*id);
  }
  return href;
}

std::string InternalIdOf(const json::value& resource_body) {
  const json::value* href = FindPointer(resource_body, arm::kPathInternalId);
  return href != nullptr && href->is_string() ? std::string(href->as_string()) : std::string();
}

std::optional<PendingNotification> ParsePendingNotification(const json::value& body) {
  const json::value* props = FindPointer(body, "/properties");
  if (props == nullptr || !props->is_object()) return std::nullopt;
  auto op = GetString(props->as_object(), "operationId");
  auto uri = GetString(props->as_object(), "uri");
  if (!op || op->empty() || !uri) return std::nullopt;
  return PendingNotification{std::string(*op), std::string(*uri)};
}

std::optional<OperationRecord> ParseOperation(const store::Document& doc) {
  if (!IsOperationDocument(doc.body)) return std::nullopt;
  auto op = arm::OperationDocument::FromBody(doc.id, doc.body);
  if (!op.ok()) return std::nullopt;
  OperationRecord r;
  r.partition_key = doc.partition_key;
  r.id = doc.id;
  r.request = op->request;
  r.request_name = std::string(arm::OperationRequestName(op->request));
  r.status = op->status;
  r.external_id = op->external_id;
  r.internal_id = op->internal_id;
  r.notification_uri = op->notification_uri;
  r.awaiting_cluster_service = op->awaiting_cluster_service;
  r.deadline_seconds = op->deadline_seconds;
  if (FindPointer(doc.body, "/properties/startTime") != nullptr) r.start_time = op->start_time;
  return r;
}

std::string ServiceProviderClusterId(std::string_view href) {
  return "serviceprovidercluster:" + ToLower(href);
}

json::value ServiceProviderCluster::ToBody() const {
  return json::object{
      {"resourceType", kServiceProviderClusterDocType},
      {"properties", json::object{{"internalId", href},
                                  {"controlPlaneVersion", json::object{{"desiredVersion", desired_version},
                                                                       {"channelGroup", channel_group}}}}}};
}

std::optional<ServiceProviderCluster> ServiceProviderCluster::FromBody(const json::value& body) {
  if (!EqualsIgnoreCase(ResourceTypeOf(body), kServiceProviderClusterDocType)) return std::nullopt;
  const json::value* props = FindPointer(body, "/properties");
  if (props == nullptr || !props->is_object()) return std::nullopt;
  const json::object* version = GetObject(props->as_object(), "controlPlaneVersion");
  auto href = GetString(props->as_object(), "internalId");
  if (version == nullptr || !href) return std::nullopt;
  auto desired = GetString(*version, "desiredVersion");
  if (!desired) return std::nullopt;
  return ServiceProviderCluster{std::string(*href), std::string(*desired),
                                std::string(GetString(*version, "channelGroup").value_or("stable"))};
}

std::string PartitionOfResourceId(std::string_view resource_id) {
  auto id = arm::ParseResourceId(resource_id);
  return id.ok() ? arm::PartitionKey(id->subscription_id) : std::string();
}

Result<std::optional<store::Document>> FindResource(store::Store& store, std::string_view pk,
                                                    std::string_view resource_id) {
  if (resource_id.empty()) return std::optional<store::Document>();
  auto doc = store.Read(store::kResources, pk, arm::ResourceDocumentId(resource_id));
  if (doc.ok()) return std::optional<store::Document>(std::move(doc).value());
  if (!doc.error().IsNotFound()) return doc.error();
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = std::string(pk);
  q.resource_id = std::string(resource_id);
  q.max_items = 10;
  HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, store.Query(q));
  for (store::Document& d : page.documents) {
    if (IsResourceDocument(d.body)) return std::optional<store::Document>(std::move(d));
  }
  return std::optional<store::Document>();
}

json::object OperationStatusResource(const store::Document& operation) {
  auto op = arm::OperationDocument::FromBody(operation.id, operation.body);
  if (!op.ok()) return json::object{{"name", operation.id}};
  std::string path = op->operation_id;
  if (path.empty()) {
    path = arm::OperationStatusPath(PartitionOfResourceId(op->external_id), op->location, op->id);
  }
  return arm::RenderOperationStatus(*op, path);
}

std::optional<arm::ResourceId> ResourceIdOfObject(clusterservice::Client& cs, std::string_view href,
                                                  const clusterservice::ServiceObject& object) {
  const ObjectKind kind = KindOfHref(href);
  if (kind == ObjectKind::kCluster) return object.cluster_resource_id;
  if (kind != ObjectKind::kNodePool && kind != ObjectKind::kExternalAuth) return std::nullopt;
  // The child names itself; its cluster's object says where the cluster lives in ARM.
  const std::string_view segment = kind == ObjectKind::kNodePool ? "/node_pools/" : "/external_auth_configs/";
  const std::string name(object.ArmName());
  const size_t cut = href.find(segment);
  if (name.empty() || cut == std::string_view::npos) return std::nullopt;
  auto cluster = cs.Get(href.substr(0, cut));
  if (!cluster.ok()) return std::nullopt;
  std::optional<arm::ResourceId> id = clusterservice::ParseServiceObject(*cluster).cluster_resource_id;
  if (!id) return std::nullopt;
  id->kind = kind == ObjectKind::kNodePool ? arm::ResourceKind::kNodePool : arm::ResourceKind::kExternalAuth;
  id->child_name = name;
  return id;
}

}  // namespace hcprp::backend
