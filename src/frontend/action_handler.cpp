// POST requestAdminCredential and revokeCredentials on a cluster.
#include "api/api_version.h"
#include "arm/headers.h"
#include "clusterservice/mapping.h"
#include "frontend/internal.h"
#include "pki/x509.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

constexpr std::string_view kCsrField = "certificateSigningRequest";
// The identity a break-glass certificate request must name, as the real service requires.
constexpr std::string_view kBreakGlassCommonName = "system:customer-break-glass:system-admin";
constexpr std::string_view kBreakGlassOrganization = "system:masters";

// Whether requestAdminCredential takes {"certificateSigningRequest": PEM} (required) in this
// api-version (the version table says). Older api-versions take no body and, like the real
// service, ignore one.
bool TakesCertificateSigningRequest(std::string_view api_version) {
  const api::ApiVersion* v = api::FindApiVersion(api_version);
  return v != nullptr && v->credential_request_takes_csr;
}

std::string Quoted(std::string_view s) { return ToJson(json::value(json::string(s))); }

// The problems of a certificate signing request, worded as the real service words them; empty when
// it is acceptable.
std::vector<arm::CloudErrorBody> CsrProblems(std::string_view pem) {
  const std::string target(kCsrField);
  auto invalid = [&](std::string value, std::string detail) {
    return arm::CloudErrorBody{std::string(arm::codes::kInvalidRequestContent),
                               "Invalid value: " + value + ": " + detail,
                               target,
                               {}};
  };
  if (pem.empty()) {
    return {
        arm::CloudErrorBody{std::string(arm::codes::kInvalidRequestContent), "Required value", target, {}}};
  }
  auto csr = pki::ParseCsr(pem);
  if (!csr.ok()) return {invalid("\"\"", csr.error().message())};
  if (!csr->signature_valid) return {invalid("\"\"", "certificate request signature is invalid")};
  std::vector<arm::CloudErrorBody> out;
  if (csr->common_name != kBreakGlassCommonName) {
    out.push_back(
        invalid(Quoted(csr->common_name), "subject common name must be " + Quoted(kBreakGlassCommonName)));
  }
  if (csr->organizations.size() != 1 || csr->organizations[0] != kBreakGlassOrganization) {
    json::value orgs = nullptr;
    if (!csr->organizations.empty()) orgs = json::array(csr->organizations.begin(), csr->organizations.end());
    out.push_back(invalid(ToJson(orgs),
                          "subject organization must be exactly [" + Quoted(kBreakGlassOrganization) + "]"));
  }
  return out;
}

// Non-terminal credential operations of a cluster.
Result<std::vector<arm::OperationDocument>> CredentialOperations(const Env& env, std::string_view pk,
                                                                 std::string_view cluster_id) {
  std::vector<arm::OperationDocument> out;
  store::QueryOptions q;
  q.container = std::string(store::kResources);
  q.partition_key = std::string(pk);
  q.resource_type = std::string(arm::kOperationDocType);
  q.non_terminal_only = true;
  q.max_items = 1000;
  do {
    HCPRP_ASSIGN_OR_RETURN(auto page, env.store->Query(q));
    for (const auto& d : page.documents) {
      auto op = arm::OperationDocument::FromBody(d.id, d.body);
      if (!op.ok() || !EqualsIgnoreCase(op->external_id, cluster_id)) continue;
      if (op->request == arm::OperationRequest::kRequestCredential ||
          op->request == arm::OperationRequest::kRevokeCredentials) {
        out.push_back(std::move(op).value());
      }
    }
    q.continuation = page.continuation;
  } while (!q.continuation.empty());
  return out;
}

}  // namespace

Response HandleClusterAction(Env& env, RequestContext& ctx) {
  const bool request_credential = ctx.route.action == "requestAdminCredential";
  arm::ResourceId id = ctx.route.ResourceIdOf();
  std::string cluster_path = ctx.path.substr(0, ctx.path.rfind('/'));

  // Body: from 2026-09-01-preview on, requestAdminCredential carries {"certificateSigningRequest":
  // PEM}; before, it takes none (and ignores one). revokeCredentials takes none.
  const bool with_csr = request_credential && TakesCertificateSigningRequest(ctx.api_version);
  json::object cs_body;
  if (!ctx.req->body().empty() && (with_csr || !request_credential)) {
    auto parsed = ParseJson(ctx.req->body(), env.options.max_json_depth);
    if (!parsed.ok() || !parsed->is_object()) {
      return ErrorReply(CloudError::InvalidRequestContent(
          "The request content was invalid and could not be deserialized: " +
          (parsed.ok() ? std::string("the body must be a JSON object.") : parsed.error().message())));
    }
    if (with_csr) {
      for (const auto& [k, v] : parsed->as_object()) {
        if (k == kCsrField) {
          if (!v.is_string()) {
            return ErrorReply(CloudError::InvalidRequestContent("certificateSigningRequest must be a string.",
                                                                std::string(kCsrField)));
          }
          cs_body["certificate_signing_request"] = v;
        } else {
          return ErrorReply(CloudError::InvalidRequestContent(
              "The property '" + std::string(k) + "' is not allowed.", std::string(k)));
        }
      }
    }
  }
  if (with_csr) {
    const json::value* csr = cs_body.if_contains("certificate_signing_request");
    auto problems = CsrProblems(csr ? std::string_view(csr->as_string()) : std::string_view());
    if (!problems.empty()) return ErrorReply(CloudError::FromProblems(std::move(problems)));
  }

  auto cluster = LoadResource(env, id.subscription_id, cluster_path);
  if (!cluster.ok()) return ErrorReply(arm::FromError(cluster.error()));
  if (!cluster->has_value()) {
    return ErrorReply(
        CloudError::ResourceNotFound(cluster_path, arm::kClusterType, id.cluster_name, id.resource_group));
  }
  const LoadedResource& c = **cluster;
  auto active = ActiveOperation(env, c);
  if (!active.ok()) return ErrorReply(arm::FromError(active.error()));
  if (active->has_value() || EqualsIgnoreCase(c.doc.provisioning_state, arm::kStateDeleting) ||
      c.doc.internal_id.empty()) {
    return ErrorReply(CloudError::Conflict(
        cluster_path, "The cluster has an operation in progress; retry when it has finished."));
  }
  const std::string pk = arm::PartitionKey(id.subscription_id);
  auto pending = CredentialOperations(env, pk, c.doc.resource_id);
  if (!pending.ok()) return ErrorReply(arm::FromError(pending.error()));
  for (const auto& op : *pending) {
    if (op.request == arm::OperationRequest::kRevokeCredentials) {
      Response res = ErrorReply(CloudError::Conflict(
          cluster_path, "A credential revocation is in progress; retry when it has finished."));
      res.set(arm::headers::kRetryAfter, std::to_string(env.options.retry_after_seconds));
      return res;
    }
  }

  auto result = env.cs->Action(
      c.doc.internal_id,
      request_credential ? clusterservice::kCsRequestCredential : clusterservice::kCsRevokeCredentials,
      cs_body);
  if (!result.ok()) {
    if (result.error().Is(ErrorCode::kInvalidArgument)) {
      return ErrorReply(CloudError::InvalidRequestContent(result.error().message()));
    }
    if (result.error().IsConflict())
      return ErrorReply(CloudError::Conflict(cluster_path, result.error().message()));
    return ErrorReply(arm::FromError(result.error()));
  }
  // A credential request's internal ID is the credential's href, read again when the result is
  // fetched (the kubeconfig is never stored); a revocation acts on the cluster.
  std::string internal_id = c.doc.internal_id;
  if (request_credential) {
    if (auto href = GetString(*result, "href"); href && !href->empty()) internal_id = std::string(*href);
  }
  auto op = NewOperation(env,
                         request_credential ? arm::OperationRequest::kRequestCredential
                                            : arm::OperationRequest::kRevokeCredentials,
                         c.doc.resource_id, internal_id, c.doc.location);
  Expose(ctx, op);
  auto written =
      env.store->Create(store::kResources, pk, op.id, op.ToBody(), env.options.operation_ttl_seconds);
  if (!written.ok()) return ErrorReply(arm::FromError(written.error()));
  Response res = EmptyReply(202);
  AddAsyncHeaders(env, ctx, op, res, true);
  return res;
}

}  // namespace hcprp::frontend
