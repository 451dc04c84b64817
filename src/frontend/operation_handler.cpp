// GET hcpOperationStatuses/{id} and hcpOperationResults/{id}.
#include "arm/headers.h"
#include "arm/operation_status.h"
#include "frontend/internal.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

CloudError OperationNotFound(const RequestContext& ctx) {
  return {404, arm::codes::kNotFound, "The operation '" + ctx.route.name + "' was not found.", ctx.path};
}

// The operation result rules (docs/architecture.md, "Operation status and visibility"): same
// subscription (the partition), same location, exposed, and
// the same tenant and client object ID as the request that started it.
bool Visible(const RequestContext& ctx, const arm::OperationDocument& op) {
  if (!op.exposed()) return false;
  if (!op.location.empty() && !EqualsIgnoreCase(op.location, ctx.route.location)) return false;
  return EqualsIgnoreCase(op.tenant_id, ctx.tenant_id) &&
         EqualsIgnoreCase(op.client_id, ctx.client_object_id);
}

// The status a failed or canceled operation's result answers with.
int FailureStatus(const arm::OperationDocument& op) {
  if (EqualsIgnoreCase(op.status, arm::kStateCanceled)) return 409;
  if (!op.error || op.error->code == arm::codes::kInternalServerError) return 500;
  return 400;
}

}  // namespace

Response HandleOperation(Env& env, RequestContext& ctx) {
  auto loaded = LoadOperation(env, ctx.route.subscription_id, ctx.route.name);
  if (!loaded.ok()) return ErrorReply(arm::FromError(loaded.error()));
  if (!loaded->has_value() || !Visible(ctx, **loaded)) return ErrorReply(OperationNotFound(ctx));
  const arm::OperationDocument& op = **loaded;

  if (ctx.route.kind == RouteKind::kOperationStatus) {
    return JsonReply(200, arm::RenderOperationStatus(op, ctx.path));
  }

  if (!arm::IsTerminalState(op.status)) {
    Response res = EmptyReply(202);
    res.set(arm::headers::kLocation, ResultUrl(ctx, op));
    res.set(arm::headers::kRetryAfter, std::to_string(env.options.retry_after_seconds));
    return res;
  }
  if (!EqualsIgnoreCase(op.status, arm::kStateSucceeded)) {
    json::object status = arm::RenderOperationStatus(op, ctx.path);
    arm::CloudError e;
    e.status = FailureStatus(op);
    const auto& err = status.at("error").as_object();
    e.body.code = std::string(GetString(err, "code").value_or("InternalServerError"));
    e.body.message = std::string(GetString(err, "message").value_or(""));
    e.body.target = std::string(GetString(err, "target").value_or(""));
    return ErrorReply(e);
  }
  switch (op.request) {
    case arm::OperationRequest::kDelete:
    case arm::OperationRequest::kRevokeCredentials:
      return EmptyReply(204);
    case arm::OperationRequest::kCreate:
    case arm::OperationRequest::kUpdate: {
      auto id = arm::ParseResourceId(op.external_id);
      if (!id.ok()) return ErrorReply(CloudError::Internal());
      auto r = LoadResource(env, id->subscription_id, op.external_id);
      if (!r.ok()) return ErrorReply(arm::FromError(r.error()));
      if (!r->has_value()) return EmptyReply(204);
      auto body = RenderResource(ctx, **r);
      if (!body.ok()) return ErrorReply(arm::FromError(body.error()));
      return JsonReply(200, *body);
    }
    case arm::OperationRequest::kRequestCredential: {
      auto cred = env.cs->Get(op.internal_id);
      if (!cred.ok()) {
        if (cred.error().IsNotFound()) {
          return ErrorReply(CloudError(404, arm::codes::kNotFound, "The credential is no longer available."));
        }
        return ErrorReply(arm::FromError(cred.error()));
      }
      json::object out;
      auto kubeconfig = GetString(*cred, "kubeconfig");
      if (!kubeconfig) return ErrorReply(CloudError::Internal());
      out["kubeconfig"] = *kubeconfig;
      if (auto exp = GetString(*cred, "expiration_timestamp")) {
        out["expirationTimestamp"] = *exp;
      } else if (auto exp2 = GetString(*cred, "expirationTimestamp")) {
        out["expirationTimestamp"] = *exp2;
      }
      return JsonReply(200, out);
    }
  }
  return ErrorReply(CloudError::Internal());
}

}  // namespace hcprp::frontend
