#include "arm/documents.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/time.h"
#include "core/uuid.h"

namespace hcprp::arm {
namespace {

const json::object* PropertiesOf(const json::value& body, std::string_view want_type, std::string* type_out,
                                 std::string* why) {
  const auto* o = body.if_object();
  if (o == nullptr) {
    *why = "document body is not an object";
    return nullptr;
  }
  auto type = GetString(*o, "resourceType");
  if (!type) {
    *why = "document has no resourceType";
    return nullptr;
  }
  if (!want_type.empty() && !EqualsIgnoreCase(*type, want_type)) {
    *why = "document has resourceType " + std::string(*type);
    return nullptr;
  }
  if (type_out != nullptr) *type_out = ToLower(*type);
  const auto* p = GetObject(*o, "properties");
  if (p == nullptr) {
    *why = "document has no properties";
    return nullptr;
  }
  return p;
}

std::string StringOr(const json::object& o, std::string_view key) {
  auto s = GetString(o, key);
  return s ? std::string(*s) : std::string();
}

void PutIfNotEmpty(json::object& o, std::string_view key, const std::string& v) {
  if (!v.empty()) o[key] = v;
}

}  // namespace

std::string ResourceDocumentId(std::string_view resource_id) {
  // Requests name the same resources again and again (a GET and the polls after a write), and the
  // hash is about a tenth of a GET's own work: each thread remembers the IDs it made last, a few
  // hundred at most (about 100 KB).
  constexpr size_t kRemembered = 512;
  thread_local std::unordered_map<std::string, std::string> remembered;
  std::string key = ToLower(resource_id);
  if (auto it = remembered.find(key); it != remembered.end()) return it->second;
  std::string id = UuidV5(kResourceIdNamespace, key);
  if (remembered.size() >= kRemembered) remembered.clear();
  remembered.emplace(std::move(key), id);
  return id;
}

std::string PartitionKey(std::string_view subscription_id) { return ToLower(subscription_id); }

bool IsTerminalState(std::string_view state) {
  return std::any_of(kTerminalStates.begin(), kTerminalStates.end(),
                     [&](std::string_view t) { return EqualsIgnoreCase(state, t); });
}

json::object OperationError::ToJson() const {
  json::object o;
  o["code"] = code;
  o["message"] = message;
  if (!target.empty()) o["target"] = target;
  if (!details.empty()) o["details"] = details;
  return o;
}

OperationError OperationError::FromJson(const json::object& o) {
  OperationError e;
  e.code = StringOr(o, "code");
  e.message = StringOr(o, "message");
  e.target = StringOr(o, "target");
  if (const auto* d = GetArray(o, "details")) e.details = *d;
  return e;
}

// ---------------------------------------------------------------------------------------------

json::value ResourceDocument::ToBody() const {
  json::object p;
  p["resourceId"] = resource_id;
  p["internalId"] = internal_id;
  p["location"] = location;
  if (active_operation_id) p["activeOperationId"] = *active_operation_id;
  p["provisioningState"] = provisioning_state;
  if (identity) p["identity"] = *identity;
  if (system_data) p["systemData"] = *system_data;
  p["tags"] = tags;
  p["resource"] = resource;
  p["clusterServiceStatus"] = service_status;
  json::object body;
  body["resourceType"] = ToLower(resource_type);
  body["properties"] = std::move(p);
  return body;
}

Result<ResourceDocument> ResourceDocument::FromBody(const json::value& body) {
  return FromBody(json::value(body));
}

Result<ResourceDocument> ResourceDocument::FromBody(json::value&& body) {
  std::string why;
  ResourceDocument d;
  const auto* props = PropertiesOf(body, "", &d.resource_type, &why);
  if (props == nullptr) return Error::Corruption(why);
  if (d.resource_type != kClusterDocType && d.resource_type != kNodePoolDocType &&
      d.resource_type != kExternalAuthDocType) {
    return Error::Corruption("not a resource document: " + d.resource_type);
  }
  // PropertiesOf checked the shape; the members are taken from the mutable tree.
  json::object& p = body.as_object()["properties"].as_object();
  auto rid = GetString(p, "resourceId");
  if (!rid || rid->empty()) return Error::Corruption("resource document without resourceId");
  d.resource_id = std::string(*rid);
  d.internal_id = StringOr(p, "internalId");
  d.location = StringOr(p, "location");
  if (auto a = GetString(p, "activeOperationId"); a && !a->empty()) d.active_operation_id = std::string(*a);
  d.provisioning_state = StringOr(p, "provisioningState");
  auto take = [&p](std::string_view key) -> json::object* {
    auto it = p.find(key);
    return it != p.end() && it->value().is_object() ? &it->value().as_object() : nullptr;
  };
  if (auto* i = take("identity")) d.identity = std::move(*i);
  if (auto* s = take("systemData")) d.system_data = std::move(*s);
  if (auto* t = take("tags")) d.tags = std::move(*t);
  if (auto* r = take("resource")) d.resource = std::move(*r);
  if (auto* c = take("clusterServiceStatus")) d.service_status = std::move(*c);
  return d;
}

// ---------------------------------------------------------------------------------------------

namespace {
constexpr std::array<std::pair<OperationRequest, std::string_view>, 5> kRequestNames = {{
    {OperationRequest::kCreate, "Create"},
    {OperationRequest::kUpdate, "Update"},
    {OperationRequest::kDelete, "Delete"},
    {OperationRequest::kRequestCredential, "RequestCredential"},
    {OperationRequest::kRevokeCredentials, "RevokeCredentials"},
}};
constexpr std::array<std::pair<SubscriptionState, std::string_view>, 5> kStateNames = {{
    {SubscriptionState::kRegistered, "Registered"},
    {SubscriptionState::kUnregistered, "Unregistered"},
    {SubscriptionState::kWarned, "Warned"},
    {SubscriptionState::kSuspended, "Suspended"},
    {SubscriptionState::kDeleted, "Deleted"},
}};
}  // namespace

std::string_view OperationRequestName(OperationRequest r) {
  for (const auto& [k, v] : kRequestNames) {
    if (k == r) return v;
  }
  return "Unknown";
}

Result<OperationRequest> ParseOperationRequest(std::string_view name) {
  for (const auto& [k, v] : kRequestNames) {
    if (EqualsIgnoreCase(v, name)) return k;
  }
  return Error::InvalidArgument("unknown operation request '" + std::string(name) + "'");
}

std::string PendingNotificationId(std::string_view operation_id) {
  return "notify-" + std::string(operation_id);
}

json::value PendingNotificationBody(std::string_view operation_id, std::string_view uri) {
  return json::object{{"resourceType", kPendingNotificationDocType},
                      {"properties", json::object{{"operationId", operation_id}, {"uri", uri}}}};
}

json::value OperationDocument::ToBody() const {
  json::object p;
  PutIfNotEmpty(p, "tenantId", tenant_id);
  PutIfNotEmpty(p, "clientId", client_id);
  p["request"] = OperationRequestName(request);
  p["externalId"] = external_id;
  p["internalId"] = internal_id;
  PutIfNotEmpty(p, "operationId", operation_id);
  PutIfNotEmpty(p, "notificationUri", notification_uri);
  PutIfNotEmpty(p, "location", location);
  p["startTime"] = FormatRfc3339(start_time, true);
  p["lastTransitionTime"] = FormatRfc3339(last_transition_time, true);
  p["status"] = status;
  if (error) p["error"] = error->ToJson();
  if (awaiting_cluster_service) p["awaitingClusterService"] = true;
  if (deadline_seconds) p["deadlineSeconds"] = *deadline_seconds;
  json::object body;
  body["resourceType"] = kOperationDocType;
  body["properties"] = std::move(p);
  return body;
}

Result<OperationDocument> OperationDocument::FromBody(std::string id, const json::value& body) {
  std::string why;
  const auto* p = PropertiesOf(body, kOperationDocType, nullptr, &why);
  if (p == nullptr) return Error::Corruption(why);
  OperationDocument d;
  d.id = std::move(id);
  d.tenant_id = StringOr(*p, "tenantId");
  d.client_id = StringOr(*p, "clientId");
  auto req = ParseOperationRequest(StringOr(*p, "request"));
  if (!req.ok()) return Error::Corruption(req.error().message());
  d.request = *req;
  d.external_id = StringOr(*p, "externalId");
  d.internal_id = StringOr(*p, "internalId");
  d.operation_id = StringOr(*p, "operationId");
  d.notification_uri = StringOr(*p, "notificationUri");
  d.location = StringOr(*p, "location");
  if (auto t = GetString(*p, "startTime")) {
    auto parsed = ParseRfc3339(*t);
    if (!parsed.ok()) return Error::Corruption("operation startTime: " + parsed.error().message());
    d.start_time = *parsed;
  }
  if (auto t = GetString(*p, "lastTransitionTime")) {
    auto parsed = ParseRfc3339(*t);
    if (!parsed.ok()) return Error::Corruption("operation lastTransitionTime: " + parsed.error().message());
    d.last_transition_time = *parsed;
  }
  d.status = StringOr(*p, "status");
  if (d.status.empty()) return Error::Corruption("operation document without status");
  if (const auto* e = GetObject(*p, "error")) d.error = OperationError::FromJson(*e);
  d.awaiting_cluster_service = GetBool(*p, "awaitingClusterService").value_or(false);
  d.deadline_seconds = GetInt(*p, "deadlineSeconds");
  return d;
}

// ---------------------------------------------------------------------------------------------

std::string_view SubscriptionStateName(SubscriptionState s) {
  for (const auto& [k, v] : kStateNames) {
    if (k == s) return v;
  }
  return "Unknown";
}

Result<SubscriptionState> ParseSubscriptionState(std::string_view name) {
  for (const auto& [k, v] : kStateNames) {
    if (EqualsIgnoreCase(v, name)) return k;
  }
  return Error::InvalidArgument("unknown subscription state '" + std::string(name) + "'");
}

std::optional<std::string> SubscriptionDocument::tenant_id() const {
  const auto* p = GetObject(properties, "properties");
  if (p == nullptr) return std::nullopt;
  auto t = GetString(*p, "tenantId");
  if (!t) return std::nullopt;
  return std::string(*t);
}

bool SubscriptionDocument::HasRegisteredFeature(std::string_view feature) const {
  const json::object* p = GetObject(properties, "properties");
  const json::array* features = p != nullptr ? GetArray(*p, "registeredFeatures") : nullptr;
  if (features == nullptr) return false;
  auto same = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  };
  for (const json::value& f : *features) {
    const json::object* o = f.if_object();
    if (o == nullptr) continue;
    auto name = GetString(*o, "name");
    if (name && same(*name, feature) &&
        GetString(*o, "state") == std::optional<std::string_view>("Registered"))
      return true;
  }
  return false;
}

json::value SubscriptionDocument::ToBody() const {
  json::object body;
  body["resourceType"] = kSubscriptionDocType;
  body["properties"] = properties;
  return body;
}

Result<SubscriptionDocument> SubscriptionDocument::FromBody(std::string id, const json::value& body) {
  return FromBody(std::move(id), json::value(body));
}

Result<SubscriptionDocument> SubscriptionDocument::FromBody(std::string id, json::value&& body) {
  std::string why;
  const auto* p = PropertiesOf(body, kSubscriptionDocType, nullptr, &why);
  if (p == nullptr) return Error::Corruption(why);
  SubscriptionDocument d;
  d.id = std::move(id);
  auto state = ParseSubscriptionState(StringOr(*p, "state"));
  if (!state.ok()) return Error::Corruption(state.error().message());
  d.state = *state;
  d.properties = std::move(body.as_object()["properties"].as_object());
  return d;
}

}  // namespace hcprp::arm
