// Helpers shared by the handlers.
#include <algorithm>
#include <cctype>
#include <vector>

#include "api/api.h"
#include "arm/headers.h"
#include "arm/operation_status.h"
#include "arm/operation_writes.h"
#include "arm/paging.h"
#include "clusterservice/event.h"
#include "clusterservice/mapping.h"
#include "core/time.h"
#include "core/url_encoding.h"
#include "core/uuid.h"
#include "frontend/internal.h"

namespace hcprp::frontend {

std::string RequestContext::Header(std::string_view name) const {
  auto it = req->find(name);
  if (it == req->end()) return "";
  return std::string(it->value());
}

bool RequestContext::HasHeader(std::string_view name) const { return req->find(name) != req->end(); }

Response JsonTextReply(int status, std::string serialized) {
  Response res{static_cast<bhttp::status>(status), 11};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = std::move(serialized);
  return res;
}

Response JsonReply(int status, const json::value& body) {
  return JsonTextReply(status, json::serialize(body));
}

Response JsonReply(int status, const json::object& body) {
  return JsonTextReply(status, json::serialize(body));
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
         "?api-version=" + EncodeQueryComponent(ctx.api_version);
}

std::string ResultUrl(const RequestContext& ctx, const arm::OperationDocument& op) {
  auto id = arm::ParseResourceId(op.external_id);
  std::string sub = id.ok() ? id->subscription_id : ctx.route.subscription_id;
  return ctx.base_url + arm::OperationResultPath(sub, op.location, op.id) +
         "?api-version=" + EncodeQueryComponent(ctx.api_version);
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
  HCPRP_ASSIGN_OR_RETURN(auto parsed, arm::ResourceDocument::FromBody(std::move(doc->body)));
  r.etag = doc->etag;
  r.timestamp_ms = doc->timestamp_ms;
  r.doc = std::move(parsed);
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
  HCPRP_ASSIGN_OR_RETURN(auto op, LoadOperation(env, id->subscription_id, *r.doc.active_operation_id));
  if (!op.has_value() || arm::IsTerminalState(op->status)) return std::optional<arm::OperationDocument>();
  return op;
}

arm::OperationDocument NewOperation(const Env& env, arm::OperationRequest request, std::string external_id,
                                    std::string internal_id, std::string location) {
  return arm::NewOperation(request, std::move(external_id), std::move(internal_id), std::move(location),
                           env.clock->Now());
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

// One condition the Cluster Service's provisioning engine reported (clusterServiceStatus.conditions).
struct EngineCondition {
  std::string type, status, reason, message;
  TimePoint since{};
};

std::vector<EngineCondition> EngineConditionsOf(const json::object& service_status) {
  std::vector<EngineCondition> out;
  const json::array* conditions = GetArray(service_status, "conditions");
  if (conditions == nullptr) return out;
  for (const json::value& v : *conditions) {
    const json::object* c = v.if_object();
    if (c == nullptr) continue;
    EngineCondition e;
    e.type = std::string(GetString(*c, "type").value_or(""));
    e.status = std::string(GetString(*c, "status").value_or(""));
    if (e.type.empty() || e.status.empty()) continue;
    e.reason = std::string(GetString(*c, "reason").value_or(""));
    e.message = std::string(GetString(*c, "message").value_or(""));
    auto since = ParseRfc3339(GetString(*c, "lastTransitionTime").value_or(""));
    if (since.ok()) e.since = *since;
    out.push_back(std::move(e));
  }
  return out;
}

// The API's reason pattern: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024 characters.
std::string ApiReason(std::string_view reason, std::string_view fallback) {
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_'; };
  bool ok = !reason.empty() && reason.size() <= 1024 && std::isalpha(static_cast<unsigned char>(reason[0])) &&
            word(reason.back());
  for (char ch : reason) ok = ok && (word(ch) || ch == ',' || ch == ':');
  return std::string(ok ? reason : fallback);
}

// Reasons of a condition that is not True yet but on its way; any other reason of a False or
// Unknown condition (Failed, DeletionFailed, IdentityNotFound, ...) degrades the resource.
bool InProgress(const EngineCondition& c) {
  return c.reason.empty() || c.reason == "Creating" || c.reason == "Deleting" || c.reason == "Deleted" ||
         c.reason == "Pending";
}

// "VMReady: 1 of 2 ready, 1 Creating; MachinesReady: ..." for the given conditions.
std::string Summary(const std::vector<const EngineCondition*>& conditions) {
  constexpr size_t kMaxMessage = 32768;  // the API's maxLength
  std::string s;
  for (const EngineCondition* c : conditions) {
    if (!s.empty()) s += "; ";
    s += c->type + ": " + (c->message.empty() ? c->status + " " + c->reason : c->message);
  }
  if (s.size() > kMaxMessage) s.resize(kMaxMessage);
  return s;
}

// The engine's conditions (per Azure service, MachinesReady, AzureIdentityValid) in the vocabulary the
// API defines (ConditionType is Available, Progressing or Degraded, one condition of each): a
// condition not True makes the resource unavailable; one on its way (Creating, Deleting) makes it
// progressing, any other (Failed, IdentityNotFound, ...) degraded. The engine's own Progressing (an
// upgrade) counts as progressing while True and degrades the resource when the upgrade failed; while it
// is True the machines a roll creates and deletes do not make the resource unavailable. Reason and
// lastTransitionTime come from the engine's first such condition, the message names every one of them.
json::array ConditionsFromEngine(const std::vector<EngineCondition>& engine, std::string_view state,
                                 const std::string& doc_time) {
  std::vector<const EngineCondition*> not_true, progressing, degraded;
  TimePoint latest{};
  // While an upgrade rolls machines out, machines being created and deleted are the roll's, not a loss
  // of availability.
  const bool upgrading = std::any_of(engine.begin(), engine.end(), [](const EngineCondition& c) {
    return c.type == "Progressing" && c.status == "True";
  });
  for (const EngineCondition& c : engine) {
    latest = std::max(latest, c.since);
    if (c.type == "Progressing") {  // the engine's upgrade: True while it rolls out
      if (c.status == "True") progressing.push_back(&c);
      if (c.status != "True" && c.reason == "UpgradeFailed") degraded.push_back(&c);
      continue;
    }
    if (c.status == "True") continue;
    if (c.reason == "Upgrading" || (upgrading && InProgress(c))) {
      progressing.push_back(&c);
      continue;
    }
    not_true.push_back(&c);
    (InProgress(c) ? progressing : degraded).push_back(&c);
  }
  auto earliest = [](const std::vector<const EngineCondition*>& cs) {
    TimePoint t = cs.front()->since;
    for (const EngineCondition* c : cs) t = std::min(t, c->since);
    return FormatRfc3339(t, true);
  };
  const std::string settled = FormatRfc3339(latest, true);
  const bool operation_running =
      EqualsIgnoreCase(state, arm::kStateAccepted) || EqualsIgnoreCase(state, arm::kStateProvisioning) ||
      EqualsIgnoreCase(state, arm::kStateUpdating) || EqualsIgnoreCase(state, arm::kStateDeleting);
  json::array out;
  if (not_true.empty()) {
    out.push_back(Condition("Available", "True", "AsExpected", "The resource is available.", settled));
  } else {
    out.push_back(Condition("Available", "False", ApiReason(not_true.front()->reason, "NotReady"),
                            Summary(not_true), earliest(not_true)));
  }
  if (!progressing.empty()) {
    out.push_back(Condition("Progressing", "True", ApiReason(progressing.front()->reason, "Progressing"),
                            Summary(progressing), earliest(progressing)));
  } else if (operation_running) {
    out.push_back(Condition("Progressing", "True", ApiReason(state, "Progressing"),
                            "An operation is in progress.", doc_time));
  } else {
    out.push_back(Condition("Progressing", "False", "AsExpected", "No operation is in progress.", settled));
  }
  if (!degraded.empty()) {
    out.push_back(Condition("Degraded", "True", ApiReason(degraded.front()->reason, "Degraded"),
                            Summary(degraded), earliest(degraded)));
  } else if (EqualsIgnoreCase(state, arm::kStateFailed)) {
    out.push_back(Condition("Degraded", "True", "OperationFailed", "The last operation failed.", doc_time));
  } else {
    out.push_back(Condition("Degraded", "False", "AsExpected", "The resource is not degraded.", settled));
  }
  return out;
}

// status.activeVersions of a cluster or node pool: what runs, from the Cluster Service's version
// history (newest first, down to the newest version whose rollout completed: two entries while an
// upgrade runs, one otherwise). Without a history (a Cluster Service that keeps none), the stored
// version.id once an operation on the resource has succeeded; none while it is being created.
json::array ActiveVersionsOf(const LoadedResource& r, arm::ResourceKind kind) {
  if (kind == arm::ResourceKind::kExternalAuth) return {};
  if (const json::array* history = GetArray(r.doc.service_status, "version_history")) {
    return clusterservice::ActiveVersions(*history);
  }
  if (!EqualsIgnoreCase(r.doc.provisioning_state, arm::kStateSucceeded)) return {};
  const json::object* props = GetObject(r.doc.resource, "properties");
  const json::object* version = props != nullptr ? GetObject(*props, "version") : nullptr;
  auto id = version != nullptr ? GetString(*version, "id") : std::nullopt;
  if (!id) return {};
  return json::array{json::object{{"version", *id}}};
}

// identity.userAssignedIdentities as ARM shows them: each entry carries the principalId and clientId the
// managed-identity service holds for it (status.managed_identities of the Cluster Service object, by
// lower-cased resource ID), and is {} for one it cannot read (deleted, or not read yet), as the real
// service shows it. What a client sent in an entry is never shown back.
void FillIdentityIds(const json::object& service_status, json::object& identity) {
  auto it = identity.find("userAssignedIdentities");
  if (it == identity.end() || !it->value().is_object()) return;
  const json::object* known = GetObject(service_status, "managed_identities");
  for (auto& member : it->value().as_object()) {
    json::object ids;
    const json::object* found = known != nullptr ? GetObject(*known, ToLower(member.key())) : nullptr;
    if (found != nullptr) {
      if (auto principal = GetString(*found, "principal_id")) ids["principalId"] = *principal;
      if (auto client = GetString(*found, "client_id")) ids["clientId"] = *client;
    }
    member.value() = std::move(ids);
  }
}

// A Cluster Service failure that no operation of the resource reported (an upgrade the backend started,
// or one that failed after its Update had ended): Degraded, with the Cluster Service's code and reason.
void ApplyServiceError(const json::object& service_status, std::string_view state, const std::string& when,
                       json::array& conditions) {
  const json::object* error = GetObject(service_status, "provision_error");
  if (error == nullptr || !EqualsIgnoreCase(state, arm::kStateSucceeded)) return;
  std::string message(GetString(*error, "message").value_or(""));
  if (message.empty()) message = "The Cluster Service reports a failure.";
  json::object degraded = Condition(
      "Degraded", "True", ApiReason(GetString(*error, "code").value_or(""), "ServiceError"), message, when);
  for (json::value& c : conditions) {
    if (GetString(c.as_object(), "type") == "Degraded") {
      c = std::move(degraded);
      return;
    }
  }
  conditions.push_back(std::move(degraded));
}

}  // namespace

json::object ObservedValues(const LoadedResource& r, arm::ResourceKind kind, json::object recorded) {
  json::object observed = std::move(recorded);
  if (!r.doc.service_status.empty()) {
    for (auto& [key, value] : clusterservice::ObservedFromClusterService(kind, r.doc.service_status)) {
      if (!observed.contains(key)) observed[key] = value;
    }
  }
  if (!observed.contains("status")) {
    std::string when = FormatRfc3339(FromUnixMillis(r.timestamp_ms), true);
    std::vector<EngineCondition> engine = EngineConditionsOf(r.doc.service_status);
    json::array conditions = engine.empty() ? ConditionsOf(r.doc.provisioning_state, when)
                                            : ConditionsFromEngine(engine, r.doc.provisioning_state, when);
    ApplyServiceError(r.doc.service_status, r.doc.provisioning_state, when, conditions);
    json::object status{{"conditions", std::move(conditions)}};
    if (json::array active = ActiveVersionsOf(r, kind); !active.empty())
      status["activeVersions"] = std::move(active);
    observed["status"] = std::move(status);
  }
  return observed;
}

Result<json::object> RenderResource(const RequestContext& ctx, const LoadedResource& r) {
  HCPRP_ASSIGN_OR_RETURN(api::Resource resource, api::FromStorage(r.doc.resource));
  return RenderResource(ctx, r, std::move(resource));
}

Result<json::object> RenderResource(const RequestContext& ctx, const LoadedResource& r,
                                    api::Resource resource) {
  auto id = arm::ParseResourceId(r.doc.resource_id);
  if (!id.ok()) return Error::Corruption("resource document with a bad resourceId");
  if (resource.location.empty() && id->kind != arm::ResourceKind::kExternalAuth) {
    resource.location = r.doc.location;
  }
  resource.observed = ObservedValues(r, id->kind, std::move(resource.observed));
  if (resource.identity) FillIdentityIds(r.doc.service_status, *resource.identity);
  api::Envelope envelope;
  envelope.id = r.doc.resource_id;
  envelope.name = id->Name();
  envelope.type = std::string(arm::ArmType(id->kind));
  envelope.system_data = r.doc.system_data;
  envelope.provisioning_state = r.doc.provisioning_state;
  json::object out = api::EncodeResource(ctx.api_version, std::move(resource), envelope);
  if (id->kind != arm::ResourceKind::kExternalAuth && !out.contains("tags")) out["tags"] = r.doc.tags;
  return out;
}

}  // namespace hcprp::frontend
