// Helpers shared by the handlers.
#include "api/api.h"
#include "arm/headers.h"
#include "arm/operation_status.h"
#include "arm/paging.h"
#include "core/time.h"
#include "core/uuid.h"
#include "frontend/cs_mapping.h"
#include "frontend/internal.h"

namespace hcprp::frontend {

std::string RequestContext::Header(std::string_view name) const {
  auto it = req->find(name);
  if (it == req->end()) return "";
  return std::string(it->value());
}

bool RequestContext::HasHeader(std::string_view name) const { return req->find(name) != req->end(); }

Response JsonReply(int status, const json::value& body) {
  Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(body);
  return res;
}

Response JsonReply(int status, const json::object& body) {
  Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = json::serialize(body);
  return res;
}

Response EmptyReply(int status) {
  Response res{static_cast<bhttp::status>(status), 11};
  return res;
}

Response ErrorReply(const arm::CloudError& error) {
  Response res = JsonReply(error.status, error.ToJson());
  res.set(arm::headers::kErrorCode, error.body.code);
  return res;
}

std::string StatusUrl(const RequestContext& ctx, const arm::OperationDocument& op) {
  auto id = arm::ParseResourceId(op.external_id);
  std::string sub = id.ok() ? id->subscription_id : ctx.route.subscription_id;
  return ctx.base_url + arm::OperationStatusPath(sub, op.location, op.id) +
         "?api-version=" + arm::PercentEncode(ctx.api_version);
}

std::string ResultUrl(const RequestContext& ctx, const arm::OperationDocument& op) {
  auto id = arm::ParseResourceId(op.external_id);
  std::string sub = id.ok() ? id->subscription_id : ctx.route.subscription_id;
  return ctx.base_url + arm::OperationResultPath(sub, op.location, op.id) +
         "?api-version=" + arm::PercentEncode(ctx.api_version);
}

void AddAsyncHeaders(const Env& env, const RequestContext& ctx, const arm::OperationDocument& op,
                     Response& res, bool with_location) {
  res.set(arm::headers::kAzureAsyncOperation, StatusUrl(ctx, op));
  if (with_location) {
    res.set(arm::headers::kLocation, ResultUrl(ctx, op));
    res.set(arm::headers::kRetryAfter, std::to_string(env.options.retry_after_seconds));
  }
}

Result<std::optional<LoadedResource>> LoadResource(const Env& env, std::string_view subscription_id,
                                                   std::string_view resource_id) {
  LoadedResource r;
  r.doc_id = arm::ResourceDocumentId(resource_id);
  auto doc = env.store->Read(store::kResources, arm::PartitionKey(subscription_id), r.doc_id);
  if (!doc.ok()) {
    if (doc.error().IsNotFound()) return std::optional<LoadedResource>();
    return doc.error();
  }
  auto parsed = arm::ResourceDocument::FromBody(std::move(doc->body));
  if (!parsed.ok()) return parsed.error();
  r.etag = doc->etag;
  r.timestamp_ms = doc->timestamp_ms;
  r.doc = std::move(parsed).value();
  return std::optional<LoadedResource>(std::move(r));
}

Result<std::optional<arm::OperationDocument>> LoadOperation(const Env& env, std::string_view subscription_id,
                                                            std::string_view operation_id) {
  auto doc = env.store->Read(store::kResources, arm::PartitionKey(subscription_id), ToLower(operation_id));
  if (!doc.ok()) {
    if (doc.error().IsNotFound()) return std::optional<arm::OperationDocument>();
    return doc.error();
  }
  // Anything that is not an operation document (a resource or subscription id guessed into the
  // URL) is simply not an operation.
  auto parsed = arm::OperationDocument::FromBody(doc->id, doc->body);
  if (!parsed.ok()) return std::optional<arm::OperationDocument>();
  return std::optional<arm::OperationDocument>(std::move(parsed).value());
}

Result<std::optional<arm::OperationDocument>> ActiveOperation(const Env& env, const LoadedResource& r) {
  if (!r.doc.active_operation_id) return std::optional<arm::OperationDocument>();
  auto id = arm::ParseResourceId(r.doc.resource_id);
  if (!id.ok()) return Error::Corruption("resource document with a bad resourceId");
  auto op = LoadOperation(env, id->subscription_id, *r.doc.active_operation_id);
  if (!op.ok()) return op.error();
  if (!op->has_value() || arm::IsTerminalState((*op)->status)) return std::optional<arm::OperationDocument>();
  return op;
}

arm::OperationDocument NewOperation(const Env& env, arm::OperationRequest request, std::string external_id,
                                    std::string internal_id, std::string location) {
  arm::OperationDocument op;
  op.id = NewUuidV4();
  op.request = request;
  op.external_id = std::move(external_id);
  op.internal_id = std::move(internal_id);
  op.location = std::move(location);
  op.start_time = env.clock->Now();
  op.last_transition_time = op.start_time;
  op.status = request == arm::OperationRequest::kDelete ? std::string(arm::kStateDeleting)
                                                        : std::string(arm::kStateAccepted);
  return op;
}

void Expose(const RequestContext& ctx, arm::OperationDocument& op) {
  op.tenant_id = ctx.tenant_id;
  op.client_id = ctx.client_object_id;
  // ARM's Azure-AsyncNotificationUri: the backend POSTs the final status there.
  op.notification_uri = ctx.notification_uri;
  auto id = arm::ParseResourceId(op.external_id);
  std::string sub = id.ok() ? id->subscription_id : ctx.route.subscription_id;
  op.operation_id = arm::OperationStatusPath(sub, op.location, op.id);
}

std::string ClientEtag(std::string_view store_etag) { return "\"" + std::string(store_etag) + "\""; }

api::Kind ToApiKind(arm::ResourceKind k) {
  switch (k) {
    case arm::ResourceKind::kCluster:
      return api::Kind::kCluster;
    case arm::ResourceKind::kNodePool:
      return api::Kind::kNodePool;
    case arm::ResourceKind::kExternalAuth:
      return api::Kind::kExternalAuth;
  }
  return api::Kind::kCluster;
}

namespace {

json::object Condition(std::string_view type, std::string_view status, std::string_view reason,
                       std::string_view message, const std::string& when) {
  return json::object{{"type", type},
                      {"status", status},
                      {"lastTransitionTime", when},
                      {"reason", reason},
                      {"message", message}};
}

// Conditions of a resource whose state the RP knows only through its provisioning state.
json::array ConditionsOf(std::string_view state, const std::string& when) {
  json::array c;
  if (EqualsIgnoreCase(state, arm::kStateSucceeded)) {
    c.push_back(Condition("Available", "True", "AsExpected", "The resource is available.", when));
    c.push_back(Condition("Progressing", "False", "AsExpected", "No operation is in progress.", when));
    c.push_back(Condition("Degraded", "False", "AsExpected", "The resource is not degraded.", when));
  } else if (EqualsIgnoreCase(state, arm::kStateProvisioning)) {
    c.push_back(Condition("Available", "False", "Provisioning", "The resource is being provisioned.", when));
    c.push_back(Condition("Progressing", "True", "Provisioning", "The resource is being provisioned.", when));
  } else if (EqualsIgnoreCase(state, arm::kStateUpdating)) {
    c.push_back(Condition("Available", "True", "AsExpected", "The resource is available.", when));
    c.push_back(Condition("Progressing", "True", "Updating", "The resource is being updated.", when));
  } else if (EqualsIgnoreCase(state, arm::kStateDeleting)) {
    c.push_back(Condition("Available", "Unknown", "Deleting", "The resource is being deleted.", when));
    c.push_back(Condition("Progressing", "True", "Deleting", "The resource is being deleted.", when));
  } else if (EqualsIgnoreCase(state, arm::kStateFailed)) {
    c.push_back(Condition("Progressing", "False", "OperationFailed", "The last operation failed.", when));
    c.push_back(Condition("Degraded", "True", "OperationFailed", "The last operation failed.", when));
  } else if (EqualsIgnoreCase(state, arm::kStateCanceled)) {
    c.push_back(
        Condition("Progressing", "False", "OperationCanceled", "The last operation was canceled.", when));
  } else {
    c.push_back(Condition("Progressing", "True", "Accepted", "The request was accepted.", when));
  }
  return c;
}

}  // namespace

json::object ObservedValues(const LoadedResource& r, arm::ResourceKind kind, json::object recorded) {
  json::object observed = std::move(recorded);
  if (!r.doc.service_status.empty()) {
    for (auto& [key, value] : ObservedFromClusterService(kind, r.doc.service_status)) {
      if (!observed.contains(key)) observed[key] = value;
    }
  }
  if (!observed.contains("status")) {
    std::string when = FormatRfc3339(TimePoint(std::chrono::milliseconds(r.timestamp_ms)), true);
    observed["status"] = json::object{{"conditions", ConditionsOf(r.doc.provisioning_state, when)}};
  }
  return observed;
}

Result<json::object> RenderResource(const RequestContext& ctx, const LoadedResource& r) {
  auto id = arm::ParseResourceId(r.doc.resource_id);
  if (!id.ok()) return Error::Corruption("resource document with a bad resourceId");
  auto resource = api::FromStorage(r.doc.resource);
  if (!resource.ok()) return resource.error();
  if (resource->location.empty() && id->kind != arm::ResourceKind::kExternalAuth) {
    resource->location = r.doc.location;
  }
  resource->observed = ObservedValues(r, id->kind, std::move(resource->observed));
  api::Envelope envelope;
  envelope.id = r.doc.resource_id;
  envelope.name = id->Name();
  envelope.type = std::string(arm::ArmType(id->kind));
  envelope.system_data = r.doc.system_data;
  envelope.provisioning_state = r.doc.provisioning_state;
  json::object out = api::EncodeResource(ctx.api_version, *resource, envelope);
  if (id->kind != arm::ResourceKind::kExternalAuth && !out.contains("tags")) out["tags"] = r.doc.tags;
  out["etag"] = ClientEtag(r.etag);
  return out;
}

}  // namespace hcprp::frontend
