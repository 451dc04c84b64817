// GET, PUT, PATCH and DELETE of clusters, node pools and external auths, and their lists.
#include <cctype>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "api/experimental.h"
#include "arm/headers.h"
#include "arm/operation_writes.h"
#include "arm/paging.h"
#include "arm/system_data.h"
#include "clusterservice/mapping.h"
#include "frontend/internal.h"
#include "frontend/request_decode.h"
#include "frontend/write_executor.h"
#include "frontend/write_plan.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;
namespace codes = arm::codes;

// Either a final response or "re-evaluate the request" after a lost store race.
struct Outcome {
  std::optional<Response> response;
  static Outcome Retry() { return {}; }
  static Outcome Done(Response r) { return {std::move(r)}; }
};

Response Fail(const Env& env, const RequestContext& ctx, const Error& e) {
  env.logger.Warn(
      "request failed",
      {{"request_id", ctx.request_id}, {"correlation_id", ctx.correlation_id}, {"error", e.ToString()}});
  return ErrorReply(arm::FromError(e));
}

CloudError NotFoundError(const arm::ResourceId& id, std::string_view path) {
  return CloudError::ResourceNotFound(path, arm::ArmType(id.kind), id.Name(), id.resource_group);
}

// Parses a request body as a JSON object.
std::variant<json::value, CloudError> ParseBody(const Env& env, const RequestContext& ctx, bool allow_empty) {
  const std::string& text = ctx.req->body();
  if (text.empty()) {
    if (allow_empty) return json::value(json::object());
    return CloudError::InvalidRequestContent(
        "The request content was invalid and could not be deserialized: "
        "the body is empty.");
  }
  auto parsed = ParseJson(text, env.options.max_json_depth);
  if (!parsed.ok()) {
    return CloudError::InvalidRequestContent(
        "The request content was invalid and could not be deserialized: " + parsed.error().message());
  }
  if (!parsed->is_object()) {
    return CloudError::InvalidRequestContent(
        "The request content was invalid and could not be deserialized: the body must be a JSON object.");
  }
  return std::move(parsed).value();
}

// True when `header` (a comma-separated list of entity tags, or "*") matches `etag`.
bool EtagListMatches(std::string_view header, std::string_view client_etag) {
  size_t i = 0;
  while (i < header.size()) {
    size_t j = header.find(',', i);
    if (j == std::string_view::npos) j = header.size();
    std::string_view tag = header.substr(i, j - i);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag.size() > 2 && tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == "*" || tag == client_etag) return true;
    // Tolerate clients that send the etag without quotes.
    if (client_etag.size() >= 2 && tag == client_etag.substr(1, client_etag.size() - 2)) return true;
    i = j + 1;
  }
  return false;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t k = 0;
  while (k < s.size() && (s[k] == ' ' || s[k] == '\t')) ++k;
  return s.substr(k);
}

// The If-Match / If-None-Match rules (docs/architecture.md, "ETags and preconditions"). Returns a
// response when the request stops here.
std::optional<Response> CheckPreconditions(const RequestContext& ctx, const arm::ResourceId& id,
                                           const std::optional<LoadedResource>& existing) {
  std::string if_match = Trimmed(ctx.Header("If-Match"));
  std::string if_none_match = Trimmed(ctx.Header("If-None-Match"));
  auto failed = [&](std::string msg) {
    return ErrorReply(CloudError(412, codes::kPreconditionFailed, std::move(msg), ctx.path));
  };
  if (!existing) {
    switch (ctx.method) {
      case bhttp::verb::put:
        if (!if_match.empty()) return failed("The resource does not exist, so If-Match cannot be satisfied.");
        return std::nullopt;
      case bhttp::verb::patch:
        return ErrorReply(NotFoundError(id, ctx.path));
      case bhttp::verb::delete_:
        return EmptyReply(204);
      default:
        return std::nullopt;
    }
  }
  std::string etag = ClientEtag(existing->etag);
  if (!if_match.empty() && !EtagListMatches(if_match, etag)) {
    return failed("The entity tag in If-Match does not match the current entity tag of the resource.");
  }
  if (!if_none_match.empty() && EtagListMatches(if_none_match, etag)) {
    return failed("The resource exists and If-None-Match forbids overwriting it.");
  }
  return std::nullopt;
}

// A parent cluster that is being created or deleted cannot get new or changed children. `request` is
// "create" or "update"; the wording is the real service's (target: the child's resource ID).
std::optional<CloudError> ParentBlocks(const LoadedResource& parent, std::string_view child_path,
                                       std::string_view request) {
  const std::string& st = parent.doc.provisioning_state;
  std::string_view state;
  if (EqualsIgnoreCase(st, arm::kStateDeleting)) {
    state = "deleting";
  } else if (EqualsIgnoreCase(st, arm::kStateAccepted) || EqualsIgnoreCase(st, arm::kStateProvisioning) ||
             parent.doc.internal_id.empty()) {
    state = "provisioning";
  } else {
    return std::nullopt;
  }
  return CloudError::Conflict(child_path, "Cannot " + std::string(request) +
                                              " resource while parent resource is " + std::string(state));
}

// `decoded`: the canonical resource when the caller holds it (see RenderResource).
Result<Response> RenderReply(const RequestContext& ctx, int status, const LoadedResource& r,
                             std::optional<api::Resource> decoded = std::nullopt) {
  HCPRP_ASSIGN_OR_RETURN(auto body,
                         decoded ? RenderResource(ctx, r, std::move(*decoded)) : RenderResource(ctx, r));
  Response res = JsonReply(status, body);
  res.set(bhttp::field::etag, ClientEtag(r.etag));
  return res;
}

// A created resource whose Cluster Service object the backend has not recorded yet (it does within
// milliseconds of the object's first sighting, or when it is back) holds nothing of what the Cluster
// Service assigned (the API and issuer URLs, which the published schema requires): they are read from
// the object, found by the resource's names, as the create's answer showed them. False when the
// object could not be read (the rendering then lacks them and is not cached).
bool ObserveUnrecorded(Env& env, LoadedResource& lr) {
  if (!lr.doc.internal_id.empty()) return true;
  if (auto it = lr.doc.resource.find("observed");
      it != lr.doc.resource.end() && it->value().is_object() && !it->value().as_object().empty()) {
    return true;
  }
  auto id = arm::ParseResourceId(lr.doc.resource_id);
  if (!id.ok()) return true;
  std::string parent_href;
  if (id->kind != arm::ResourceKind::kCluster) {
    auto parent = LoadResource(env, id->subscription_id, id->Cluster().ToString());
    if (!parent.ok()) return false;
    if (!parent->has_value()) return true;
    parent_href = (*parent)->doc.internal_id;
    if (parent_href.empty()) return true;
  }
  auto listed = env.cs->List(clusterservice::ClusterServiceCollection(id->kind, parent_href),
                             clusterservice::SearchForResource(*id));
  if (!listed.ok()) return false;
  for (const json::value& item : *listed) {
    const json::object* o = item.if_object();
    if (o == nullptr || !GetString(*o, "href")) continue;
    json::object observed = clusterservice::ObservedFromClusterService(id->kind, *o);
    if (!observed.empty()) lr.doc.resource["observed"] = std::move(observed);
    return true;
  }
  return true;
}

// The JSON text of a stored resource document (read with its body as text) as ctx's api-version shows
// it: from the render cache when this version of it was shown before, otherwise parsed, rendered and
// kept. Null when the document is not a readable resource document (logged).
Result<std::shared_ptr<const std::string>> RenderedText(Env& env, const RequestContext& ctx,
                                                        const store::Document& d) {
  std::string key = RenderCache::Key(ctx.api_version, d.id, d.etag, d.timestamp_ms);
  std::shared_ptr<const std::string> text = env.render_cache->Find(key);
  if (text != nullptr) return text;
  HCPRP_ASSIGN_OR_RETURN(auto stored, store::ParseBodyText(d.body_text));
  auto parsed = arm::ResourceDocument::FromBody(std::move(stored));
  if (!parsed.ok()) {
    env.logger.Warn("unreadable resource document", {{"id", d.id}, {"error", parsed.error().ToString()}});
    return std::shared_ptr<const std::string>();
  }
  LoadedResource lr{d.id, d.etag, std::move(parsed).value(), d.timestamp_ms};
  const bool complete = ObserveUnrecorded(env, lr);
  HCPRP_ASSIGN_OR_RETURN(auto rendered, RenderResource(ctx, lr));
  text = std::make_shared<const std::string>(json::serialize(rendered));
  if (complete) env.render_cache->Insert(key, text);
  return text;
}

// ------------------------------------------------------------------------------------------------

// A GET reads the document's text and answers from the render cache when this version was shown
// before in this api-version (by a GET or a list), so a repeated read parses and renders nothing.
Response Get(Env& env, RequestContext& ctx, const arm::ResourceId& id) {
  auto doc = env.store->ReadText(store::kResources, arm::PartitionKey(id.subscription_id),
                                 arm::ResourceDocumentId(ctx.path));
  if (!doc.ok()) {
    if (doc.error().IsNotFound()) return ErrorReply(NotFoundError(id, ctx.path));
    return Fail(env, ctx, doc.error());
  }
  auto text = RenderedText(env, ctx, *doc);
  if (!text.ok()) return Fail(env, ctx, text.error());
  if (*text == nullptr) return Fail(env, ctx, Error::Corruption("unreadable resource document " + doc->id));
  Response res = JsonTextReply(200, **text);
  res.set(bhttp::field::etag, ClientEtag(doc->etag));
  return res;
}

std::optional<CloudError> CheckNames(const arm::ResourceId& id) {
  if (!arm::IsValidResourceGroupName(id.resource_group)) {
    return CloudError(400, codes::kInvalidResourceGroupName,
                      "The resource group name '" + id.resource_group + "' is invalid.", id.resource_group);
  }
  api::ValidationErrors names = NameErrors(id);
  if (!names.errors.empty()) return FromValidation(names);
  return std::nullopt;
}

// Before the `attempt`-th re-evaluation of a request that lost a store race (none before the first):
// a growing pause, so that writers of one busy resource take turns instead of colliding again.
void PauseAfterLostRace(int attempt) {
  if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(attempt));
}

// The problems of a create body judged on its own (a child's without its cluster: the rules that need
// the cluster are left out); nothing when it has none.
std::optional<CloudError> BodyProblems(const Env& env, const RequestContext& ctx, const arm::ResourceId& id,
                                       const json::value& body) {
  std::optional<json::object> parent_body;
  api::DecodeOptions opts = DecodeOptionsFor(ctx, id, std::nullopt, parent_body);
  auto decoded = api::DecodeCreate(ctx.api_version, ToApiKind(id.kind),
                                   WithServiceValues(ctx, id, body, env.options.location, true), opts);
  if (auto* errs = std::get_if<api::ValidationErrors>(&decoded)) return FromValidation(*errs);
  return std::nullopt;
}

// Loads the parent cluster of a child. When it does not exist, a PUT's body is judged first, as the
// real service converts and validates a body before it reads the cluster: its problems are the 400,
// else the answer is 404.
std::variant<std::optional<LoadedResource>, Response> LoadParent(Env& env, RequestContext& ctx,
                                                                 const arm::ResourceId& id,
                                                                 const json::value& body) {
  if (id.kind == arm::ResourceKind::kCluster) return std::optional<LoadedResource>();
  auto cluster_id = id.Cluster();
  std::string cluster_path = ctx.path.substr(0, ctx.path.rfind('/'));
  cluster_path = cluster_path.substr(0, cluster_path.rfind('/'));
  auto parent = LoadResource(env, id.subscription_id, cluster_path);
  if (!parent.ok()) return Fail(env, ctx, parent.error());
  if (!parent->has_value()) {
    if (ctx.method == bhttp::verb::put) {
      if (auto problems = BodyProblems(env, ctx, id, body)) return ErrorReply(*problems);
    }
    return ErrorReply(CloudError(404, codes::kParentResourceNotFound,
                                 "The parent resource '" + cluster_path + "' was not found.", cluster_path));
  }
  return std::move(parent).value();
}

// The answer to a write plan that was not carried out: decide again after a lost race, else the
// refusal or failure.
Outcome NotCommitted(const Env& env, const RequestContext& ctx, const CommitResult& result) {
  if (std::holds_alternative<LostRace>(result)) return Outcome::Retry();
  if (const auto* refusal = std::get_if<CloudError>(&result)) return Outcome::Done(ErrorReply(*refusal));
  return Outcome::Done(Fail(env, ctx, std::get<Error>(result)));
}

// The resource-ID prefix of `parent`'s children of `kind` in the store ("{cluster id}/nodepools/").
std::string ChildIdPrefix(const LoadedResource& parent, arm::ResourceKind kind) {
  return parent.doc.resource_id + "/" + std::string(arm::ChildSegment(kind)) + "/";
}

// Whether `cluster` holds an external auth other than the one at `path` (`id`), whatever its state: one
// being deleted counts too, as the real service counts every external auth stored for the cluster.
Result<bool> HoldsOtherExternalAuth(const Env& env, const arm::ResourceId& id, const LoadedResource& cluster,
                                    std::string_view path) {
  const std::string own = arm::ResourceDocumentId(path);
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = arm::PartitionKey(id.subscription_id);
  q.resource_type = std::string(arm::DocType(id.kind));
  q.resource_id_prefix = ChildIdPrefix(cluster, id.kind);
  q.max_items = 2;     // the one at `path` and another are enough to tell
  q.body_text = true;  // only the ids are looked at
  do {
    HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, env.store->Query(q));
    for (const auto& d : page.documents) {
      if (d.id != own) return true;
    }
    q.continuation = std::move(page.continuation);
  } while (!q.continuation.empty());
  return false;
}

// The name and stored version.id of every node pool of `cluster` (api::DecodeOptions::node_pool_versions).
Result<std::vector<std::pair<std::string, std::string>>> NodePoolVersions(const Env& env,
                                                                          const arm::ResourceId& id,
                                                                          const LoadedResource& cluster) {
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = arm::PartitionKey(id.subscription_id);
  q.resource_type = std::string(arm::DocType(arm::ResourceKind::kNodePool));
  q.resource_id_prefix = ChildIdPrefix(cluster, arm::ResourceKind::kNodePool);
  q.max_items = 1000;
  std::vector<std::pair<std::string, std::string>> out;
  do {
    HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, env.store->Query(q));
    for (const auto& d : page.documents) {
      auto pool = arm::ResourceDocument::FromBody(d.body);
      if (!pool.ok()) continue;
      auto resource = api::FromStorage(pool->resource);
      const json::object* version = resource.ok() ? GetObject(resource->properties, "version") : nullptr;
      auto version_id = version != nullptr ? GetString(*version, "id") : std::nullopt;
      if (!version_id) continue;
      const std::string& rid = pool->resource_id;
      out.emplace_back(rid.substr(rid.rfind('/') + 1), std::string(*version_id));
    }
    q.continuation = std::move(page.continuation);
  } while (!q.continuation.empty());
  return out;
}

// `speculative`: the resource was not read first (see PutOrPatch). A body refused by the create rules
// then says nothing yet, since an update of an existing resource is judged by other rules; the caller
// reads the resource and decides again.
Outcome PutCreate(Env& env, RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
                  const std::optional<LoadedResource>& parent, bool speculative) {
  std::optional<json::object> parent_body;
  api::DecodeOptions opts = DecodeOptionsFor(ctx, id, parent, parent_body);
  if (id.kind == arm::ResourceKind::kExternalAuth && parent) {
    // One external auth a cluster: a create is refused while the cluster holds another. A speculative
    // create refused for it is decided again once the resource was read (a replace is allowed).
    auto others = HoldsOtherExternalAuth(env, id, *parent, ctx.path);
    if (!others.ok()) return Outcome::Done(Fail(env, ctx, others.error()));
    opts.other_external_auths = *others;
  }
  // Every resource lives in the region this deployment serves (a node pool: its cluster's).
  std::string location = parent ? parent->doc.location : env.options.location;
  auto decoded = api::DecodeCreate(ctx.api_version, ToApiKind(id.kind),
                                   WithServiceValues(ctx, id, body, location, true), opts);
  if (auto* errs = std::get_if<api::ValidationErrors>(&decoded)) {
    if (speculative) return Outcome::Retry();
    return Outcome::Done(ErrorReply(FromValidation(*errs)));
  }
  // The body is judged before the parent's state, as the real service does for a create. A speculative
  // create stops here too: the resource may exist, and an update is refused in other words.
  if (parent) {
    if (auto blocked = ParentBlocks(*parent, ctx.path, "create")) {
      if (speculative) return Outcome::Retry();
      return Outcome::Done(ErrorReply(*blocked));
    }
  }

  api::Resource resource = std::get<api::Resource>(std::move(decoded));
  auto op = NewOperation(env, arm::OperationRequest::kCreate, ctx.path, "", location);
  Expose(ctx, op);
  op.deadline_seconds = GetInt(resource.experimental, api::kCreateDeadlineSeconds);
  auto plan = PlanCreate(
      id, std::move(resource), std::move(op),
      {.resource_id = ctx.path,
       .location = std::move(location),
       .parent_internal_id = parent ? std::string_view(parent->doc.internal_id) : std::string_view(),
       .parent_doc_id = parent ? std::string_view(parent->doc_id) : std::string_view(),
       .parent_etag = parent ? std::string_view(parent->etag) : std::string_view(),
       .tenant_id = ctx.tenant_id,
       .system_data =
           CompleteSystemData(arm::MergeSystemData(std::nullopt, ctx.system_data, true), env.clock->Now()),
       .operation_ttl_seconds = env.options.operation_ttl_seconds});
  if (!plan.ok()) return Outcome::Done(Fail(env, ctx, plan.error()));
  CommitResult result = CommitCreate(env, ctx.request_id, *plan);
  auto* committed = std::get_if<Committed>(&result);
  if (committed == nullptr) return NotCommitted(env, ctx, result);
  if (committed->assigned) plan->resource.observed = std::move(*committed->assigned);
  auto res = RenderReply(ctx, 201, committed->resource, std::move(plan->resource));
  if (!res.ok()) return Outcome::Done(Fail(env, ctx, res.error()));
  AddAsyncHeaders(env, ctx, plan->op, *res, false);
  return Outcome::Done(std::move(res).value());
}

// PUT on an existing resource (replace) or PATCH: refuse while the resource is busy, decode by the
// replace or patch rules, and carry out the update's plan.
Outcome Update(Env& env, RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
               const LoadedResource& existing, const std::optional<LoadedResource>& parent, bool is_patch) {
  auto active = ActiveOperation(env, existing);
  if (!active.ok()) return Outcome::Done(Fail(env, ctx, active.error()));
  if (auto busy = UpdateRefusal(ctx.path, existing.doc, *active)) return Outcome::Done(ErrorReply(*busy));
  auto current = api::FromStorage(existing.doc.resource);
  if (!current.ok()) return Outcome::Done(Fail(env, ctx, current.error()));
  std::optional<json::object> parent_body;
  api::DecodeOptions opts = DecodeOptionsFor(ctx, id, parent, parent_body);
  opts.current_provisioning_state = existing.doc.provisioning_state;
  if (id.kind == arm::ResourceKind::kCluster) {
    auto pools = NodePoolVersions(env, id, existing);
    if (!pools.ok()) return Outcome::Done(Fail(env, ctx, pools.error()));
    opts.node_pool_versions = std::move(pools).value();
  }
  json::value service_body = WithServiceValues(ctx, id, body, existing.doc.location, false);
  auto decoded =
      is_patch
          ? api::DecodePatch(ctx.api_version, ToApiKind(id.kind), std::move(service_body), *current, opts)
          : api::DecodeReplace(ctx.api_version, ToApiKind(id.kind), std::move(service_body), *current, opts);
  if (auto* errs = std::get_if<api::ValidationErrors>(&decoded))
    return Outcome::Done(ErrorReply(FromValidation(*errs)));

  auto op = NewOperation(env, arm::OperationRequest::kUpdate, existing.doc.resource_id,
                         existing.doc.internal_id, existing.doc.location);
  Expose(ctx, op);
  auto planned =
      PlanUpdate(id, ctx.path, existing, std::get<api::Resource>(std::move(decoded)), std::move(op),
                 CompleteSystemData(arm::MergeSystemData(existing.doc.system_data, ctx.system_data, false),
                                    env.clock->Now()),
                 env.options.operation_ttl_seconds);
  if (auto* refusal = std::get_if<CloudError>(&planned)) return Outcome::Done(ErrorReply(*refusal));
  UpdatePlan& plan = std::get<UpdatePlan>(planned);
  CommitResult result = CommitUpdate(env, ctx.request_id, plan);
  auto* committed = std::get_if<Committed>(&result);
  if (committed == nullptr) return NotCommitted(env, ctx, result);
  if (is_patch) {
    Response res = EmptyReply(202);
    AddAsyncHeaders(env, ctx, plan.op, res, true);
    return Outcome::Done(std::move(res));
  }
  auto res = RenderReply(ctx, 200, committed->resource);
  if (!res.ok()) return Outcome::Done(Fail(env, ctx, res.error()));
  AddAsyncHeaders(env, ctx, plan.op, *res, false);
  return Outcome::Done(std::move(res).value());
}

// `assume_absent`: try the create without reading the resource first (see PutOrPatch).
Outcome PutOrPatchOnce(Env& env, RequestContext& ctx, const arm::ResourceId& id, const json::value& body,
                       bool assume_absent) {
  bool is_patch = ctx.method == bhttp::verb::patch;
  auto parent = LoadParent(env, ctx, id, body);
  if (auto* r = std::get_if<Response>(&parent)) return Outcome::Done(std::move(*r));
  auto& parent_doc = std::get<std::optional<LoadedResource>>(parent);
  if (assume_absent) return PutCreate(env, ctx, id, body, parent_doc, true);
  auto existing = LoadResource(env, id.subscription_id, ctx.path);
  if (!existing.ok()) return Outcome::Done(Fail(env, ctx, existing.error()));
  if (auto stop = CheckPreconditions(ctx, id, *existing)) return Outcome::Done(std::move(*stop));
  if (!existing->has_value()) return PutCreate(env, ctx, id, body, parent_doc, false);
  // An update is refused while the parent is busy before its body is judged, as the real service does.
  if (parent_doc) {
    if (auto blocked = ParentBlocks(*parent_doc, ctx.path, "update"))
      return Outcome::Done(ErrorReply(*blocked));
  }
  return Update(env, ctx, id, body, **existing, parent_doc, is_patch);
}

Response PutOrPatch(Env& env, RequestContext& ctx, const arm::ResourceId& id) {
  auto body = ParseBody(env, ctx, false);
  if (auto* e = std::get_if<CloudError>(&body)) return ErrorReply(*e);
  const json::value& value = std::get<json::value>(body);
  if (ctx.method == bhttp::verb::put) {
    // The real service judges the body before the name in the path: a body with problems is its 400.
    if (auto bad = CheckNames(id)) return ErrorReply(BodyProblems(env, ctx, id, value).value_or(*bad));
  }
  // Most PUTs create. Without conditional headers, the existence read only tells a create from an
  // update, and the create's own batch tells that too (it fails when the document exists), so the
  // create is tried first and the read saved. When the document exists, or the body fails the create
  // rules, nothing was written and the request is decided again as below.
  if (ctx.method == bhttp::verb::put && Trimmed(ctx.Header("If-Match")).empty() &&
      Trimmed(ctx.Header("If-None-Match")).empty()) {
    Outcome o = PutOrPatchOnce(env, ctx, id, value, true);
    if (o.response) return std::move(*o.response);
  }
  for (int attempt = 0; attempt <= env.options.max_store_retries; ++attempt) {
    PauseAfterLostRace(attempt);
    Outcome o = PutOrPatchOnce(env, ctx, id, value, false);
    if (o.response) return std::move(*o.response);
  }
  return ErrorReply(
      CloudError::Conflict(ctx.path, "The resource was changed concurrently; retry the request."));
}

// How many node pools of `pool`'s cluster, other than `pool`, are not being deleted; counting stops at
// `enough`.
Result<size_t> OtherLiveNodePools(const Env& env, const arm::ResourceId& id, const LoadedResource& pool,
                                  size_t enough) {
  const std::string& rid = pool.doc.resource_id;
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = arm::PartitionKey(id.subscription_id);
  q.resource_type = std::string(arm::DocType(arm::ResourceKind::kNodePool));
  q.resource_id_prefix = rid.substr(0, rid.rfind('/') + 1);
  size_t live = 0;
  do {
    HCPRP_ASSIGN_OR_RETURN(store::QueryPage page, env.store->Query(q));
    for (const auto& d : page.documents) {
      if (d.id == pool.doc_id) continue;
      auto other = arm::ResourceDocument::FromBody(d.body);
      if (!other.ok() || EqualsIgnoreCase(other->provisioning_state, arm::kStateDeleting)) continue;
      if (++live >= enough) return live;
    }
    q.continuation = std::move(page.continuation);
  } while (!q.continuation.empty());
  return live;
}

// The refusal of a node pool DELETE that would leave its cluster without a node pool (the real
// service's rule, api::CheckNodePoolDelete). Node pools being deleted do not count, so two DELETEs in a
// row cannot take a cluster's last two. A pool already being deleted is not refused (the answer points
// at its delete), and a cluster's DELETE deletes its pools without this rule.
Result<std::optional<CloudError>> LastNodePoolRefusal(const Env& env, const arm::ResourceId& id,
                                                      const LoadedResource& pool) {
  if (id.kind != arm::ResourceKind::kNodePool ||
      EqualsIgnoreCase(pool.doc.provisioning_state, arm::kStateDeleting)) {
    return std::optional<CloudError>();
  }
  HCPRP_ASSIGN_OR_RETURN(size_t others, OtherLiveNodePools(env, id, pool, 1));
  api::ValidationErrors refused = api::CheckNodePoolDelete(others);
  if (refused.errors.empty()) return std::optional<CloudError>();
  return std::optional<CloudError>(FromValidation(refused));
}

Response Delete(Env& env, RequestContext& ctx, const arm::ResourceId& id) {
  for (int attempt = 0; attempt <= env.options.max_store_retries; ++attempt) {
    PauseAfterLostRace(attempt);
    auto existing = LoadResource(env, id.subscription_id, ctx.path);
    if (!existing.ok()) return Fail(env, ctx, existing.error());
    if (auto stop = CheckPreconditions(ctx, id, *existing)) return std::move(*stop);
    auto last = LastNodePoolRefusal(env, id, **existing);
    if (!last.ok()) return Fail(env, ctx, last.error());
    if (*last) return ErrorReply(**last);
    auto op = CommitDelete(env, ctx, **existing);
    if (!op.ok()) {
      if (op.error().IsPreconditionFailed() || op.error().IsAlreadyExists()) continue;
      return Fail(env, ctx, op.error());
    }
    Response res = EmptyReply(202);
    AddAsyncHeaders(env, ctx, *op, res, true);
    return res;
  }
  return ErrorReply(
      CloudError::Conflict(ctx.path, "The resource was changed concurrently; retry the request."));
}

}  // namespace

Response HandleResource(Env& env, RequestContext& ctx) {
  arm::ResourceId id = ctx.route.ResourceIdOf();
  switch (ctx.method) {
    case bhttp::verb::get:
      return Get(env, ctx, id);
    case bhttp::verb::put:
    case bhttp::verb::patch:
      return PutOrPatch(env, ctx, id);
    case bhttp::verb::delete_:
      return Delete(env, ctx, id);
    default:
      return ErrorReply(CloudError(405, codes::kMethodNotAllowed, "The method is not supported."));
  }
}

// ------------------------------------------------------------------------------------------------

Response HandleResourceList(Env& env, RequestContext& ctx) {
  const Route& r = ctx.route;
  std::optional<size_t> top;
  if (auto it = ctx.query.find("$top"); it != ctx.query.end()) {
    size_t n = 0;
    bool ok = !it->second.empty() && it->second.size() <= 5;
    for (char c : it->second) {
      if (c < '0' || c > '9') {
        ok = false;
      } else {
        n = n * 10 + static_cast<size_t>(c - '0');
      }
    }
    if (!ok || n < 1 || n > arm::kMaxPageSize) {
      return ErrorReply(CloudError(
          400, codes::kInvalidParameter,
          "The value of $top must be an integer between 1 and " + std::to_string(arm::kMaxPageSize) + ".",
          "$top"));
    }
    top = n;
  }
  std::string continuation;
  if (auto it = ctx.query.find("$skiptoken"); it != ctx.query.end()) {
    auto decoded = arm::DecodeSkipToken(it->second);
    if (!decoded.ok()) {
      return ErrorReply(
          CloudError(400, codes::kInvalidParameter, "The $skipToken is invalid.", "$skipToken"));
    }
    continuation = std::move(decoded).value();
  }
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = arm::PartitionKey(r.subscription_id);
  q.max_items = top.value_or(arm::kDefaultPageSize);
  q.continuation = continuation;
  // Bodies as text: a version shown before is answered from the render cache by its id and etag, and
  // only the others are parsed.
  q.body_text = true;
  const std::string ns = "/providers/" + std::string(arm::kProviderNamespace) + "/hcpOpenShiftClusters/";
  switch (r.kind) {
    case RouteKind::kClusterListBySub:
      q.resource_type = std::string(arm::kClusterDocType);
      break;
    case RouteKind::kClusterListByRg:
      q.resource_type = std::string(arm::kClusterDocType);
      q.resource_id_prefix =
          "/subscriptions/" + r.subscription_id + "/resourceGroups/" + r.resource_group + ns;
      break;
    default: {
      arm::ResourceId cluster = r.ResourceIdOf().Cluster();
      std::string cluster_path = ctx.path.substr(0, ctx.path.rfind('/'));
      auto parent = LoadResource(env, r.subscription_id, cluster_path);
      if (!parent.ok()) return Fail(env, ctx, parent.error());
      if (!parent->has_value()) return ErrorReply(NotFoundError(cluster, cluster_path));
      q.resource_type = std::string(arm::DocType(r.resource_kind));
      q.resource_id_prefix = ChildIdPrefix(**parent, r.resource_kind);
      break;
    }
  }
  auto page = env.store->Query(q);
  if (!page.ok()) {
    if (page.error().Is(ErrorCode::kInvalidArgument) && !continuation.empty()) {
      return ErrorReply(
          CloudError(400, codes::kInvalidParameter, "The $skipToken is invalid.", "$skipToken"));
    }
    return Fail(env, ctx, page.error());
  }
  // The body is what serializing {"value": [...], "nextLink": ...} gives, written piece by piece: each
  // resource's text comes from the render cache when this version of it was shown in this
  // api-version before.
  std::vector<std::shared_ptr<const std::string>> texts;
  texts.reserve(page->documents.size());
  size_t bytes = 0;
  for (auto& d : page->documents) {
    auto text = RenderedText(env, ctx, d);
    if (!text.ok()) return Fail(env, ctx, text.error());
    if (*text == nullptr) continue;  // an unreadable document is left out of the page
    bytes += (*text)->size() + 1;
    texts.push_back(std::move(text).value());
  }
  std::string body;
  body.reserve(bytes + 64 + ctx.base_url.size() + ctx.path.size() + 2 * page->continuation.size());
  body += R"({"value":[)";
  bool first = true;
  for (const auto& text : texts) {
    if (!first) body.push_back(',');
    first = false;
    body += *text;
  }
  body.push_back(']');
  if (!page->continuation.empty()) {
    body += R"(,"nextLink":)";
    body += json::serialize(json::value(arm::NextLink(ctx.base_url, ctx.path, ctx.api_version, top,
                                                      arm::EncodeSkipToken(page->continuation))));
  }
  body.push_back('}');
  return JsonTextReply(200, std::move(body));
}

}  // namespace hcprp::frontend
