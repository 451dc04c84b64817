// Shared internals of the frontend: the environment handlers run in, the parsed request context,
// response helpers and the handler entry points (one file per resource kind or endpoint family).
// Not part of the module's public API.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "api/api.h"
#include "arm/cloud_error.h"
#include "arm/documents.h"
#include "arm/resource_id.h"
#include "frontend/frontend.h"
#include "frontend/render_cache.h"
#include "frontend/router.h"

namespace hcprp::frontend {

namespace bhttp = boost::beast::http;

struct Env {
  FrontendOptions options;
  store::Store* store;
  clusterservice::Client* cs;
  const Clock* clock;
  Logger logger;
  // Rendered resources of GETs and lists (see render_cache.h); sized by options.render_cache_bytes.
  std::shared_ptr<RenderCache> render_cache = std::make_shared<RenderCache>(options.render_cache_bytes);
};

// What middleware learnt about a request before a handler runs.
struct RequestContext {
  const Request* req = nullptr;
  bhttp::verb method = bhttp::verb::unknown;
  std::string path;                          // decoded path as given, without a trailing slash
  std::map<std::string, std::string> query;  // keys lower-cased, values decoded
  Route route;
  std::string_view route_template = "unmatched";  // RouteTemplate(route) once a route matched
  std::string api_version;
  std::string request_id;
  std::string correlation_id;
  std::string base_url;          // scheme://host of Referer (or Host), for header URLs
  std::string tenant_id;         // x-ms-home-tenant-id
  std::string client_object_id;  // x-ms-client-object-id
  std::optional<json::object> system_data;
  std::string notification_uri;
  std::optional<arm::SubscriptionDocument> subscription;  // when the route is subscription-scoped

  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// The writes of one store batch, moved into the vector (a braced list would copy every body).
template <typename... Ops>
std::vector<store::WriteOp> Writes(Ops&&... ops) {
  std::vector<store::WriteOp> v;
  v.reserve(sizeof...(ops));
  (v.push_back(std::forward<Ops>(ops)), ...);
  return v;
}

// Response builders.
Response JsonReply(int status, const json::value& body);
Response JsonReply(int status, const json::object& body);    // without converting (copying) to a value
Response JsonTextReply(int status, std::string serialized);  // a body serialized already
Response EmptyReply(int status);
Response ErrorReply(const arm::CloudError& error);

// Adds Azure-AsyncOperation, Location and Retry-After for an operation (all absolute URLs built from
// the context's base URL and carrying its api-version).
void AddAsyncHeaders(const Env& env, const RequestContext& ctx, const arm::OperationDocument& op,
                     Response& res, bool with_location);
std::string StatusUrl(const RequestContext& ctx, const arm::OperationDocument& op);
std::string ResultUrl(const RequestContext& ctx, const arm::OperationDocument& op);

// A resource document as read from the store, with its store etag.
struct LoadedResource {
  std::string doc_id;
  std::string etag;
  arm::ResourceDocument doc;
  int64_t timestamp_ms = 0;  // the store's commit time of this version of the document
};
// nullopt when absent.
Result<std::optional<LoadedResource>> LoadResource(const Env& env, std::string_view subscription_id,
                                                   std::string_view resource_id);
Result<std::optional<arm::OperationDocument>> LoadOperation(const Env& env, std::string_view subscription_id,
                                                            std::string_view operation_id);
// The active, non-terminal operation of a resource, if any.
Result<std::optional<arm::OperationDocument>> ActiveOperation(const Env& env, const LoadedResource& r);

// A new operation document for a resource (status Accepted, or Deleting for deletes).
arm::OperationDocument NewOperation(const Env& env, arm::OperationRequest request, std::string external_id,
                                    std::string internal_id, std::string location);
// Marks `op` exposed to the requesting identity.
void Expose(const RequestContext& ctx, arm::OperationDocument& op);

api::Kind ToApiKind(arm::ResourceKind kind);

// The client-visible ETag of a store etag: the store etag, quoted.
std::string ClientEtag(std::string_view store_etag);

// The wire form of a resource for ctx.api_version, with the service-set read-only values
// (ObservedValues) merged in.
Result<json::object> RenderResource(const RequestContext& ctx, const LoadedResource& r);
// The same with the canonical resource the caller holds already (decoded, so not parsed again from
// the document's stored form); `r.doc.resource` is not read.
Result<json::object> RenderResource(const RequestContext& ctx, const LoadedResource& r,
                                    api::Resource resource);

// The read-only values a response carries beyond what the client sent: the Cluster Service's
// (api.url, console.url, dns.baseDomain, platform.issuerUrl; recorded when the Cluster Service
// answered a create or update, or synced by the backend into clusterServiceStatus) and
// status.conditions: the provisioning engine's conditions from clusterServiceStatus folded into
// Available/Progressing/Degraded when the backend synced some, else derived from the provisioning
// state, their lastTransitionTime being the last write of the resource document; and for clusters
// and node pools whose last operation succeeded, status.activeVersions (their version.id).
// `recorded` is the resource's api::Resource::observed.
json::object ObservedValues(const LoadedResource& r, arm::ResourceKind kind, json::object recorded);

// Handlers. Each returns a complete response (errors included).
Response HandleResource(Env& env, RequestContext& ctx);       // GET/PUT/PATCH/DELETE
Response HandleResourceList(Env& env, RequestContext& ctx);   // lists by subscription/rg/parent
Response HandleClusterAction(Env& env, RequestContext& ctx);  // requestAdminCredential, revokeCredentials
Response HandleOperation(Env& env, RequestContext& ctx);      // hcpOperationStatuses / hcpOperationResults
Response HandleSubscription(Env& env, RequestContext& ctx);   // PUT/GET /subscriptions/{id}
Response HandleMetadata(Env& env, RequestContext& ctx);       // versions, role sets, operations list
Response HandlePreflight(Env& env, RequestContext& ctx);
Response HandleHealth(Env& env, RequestContext& ctx);  // healthz, readyz

// Deletes a resource and its children (cancel active operations, one Delete operation per resource,
// only the one for `resource` exposed when `expose` is true). Idempotent and resumable: resources
// already deleting keep their delete operation. Returns the Delete operation of `resource`.
Result<arm::OperationDocument> StartDelete(Env& env, const RequestContext* ctx,
                                           const LoadedResource& resource);

}  // namespace hcprp::frontend
