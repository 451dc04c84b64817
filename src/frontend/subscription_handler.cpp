// PUT and GET /subscriptions/{id}?api-version=2.0 (ARM subscription lifecycle).
#include <cctype>

#include "frontend/internal.h"

namespace hcprp::frontend {
namespace {

using arm::CloudError;

// Starts the deletion of every resource of a deleted subscription: clusters first (with their
// children), then any child left over. Idempotent: resources already deleting keep their operation.
Status DeleteEverything(Env& env, std::string_view subscription_id) {
  const std::string pk = arm::PartitionKey(subscription_id);
  for (auto type : {arm::kClusterDocType, arm::kNodePoolDocType, arm::kExternalAuthDocType}) {
    store::QueryOptions q;
    q.container = std::string(store::kResources);
    q.partition_key = pk;
    q.resource_type = std::string(type);
    q.max_items = std::max<size_t>(1, env.options.delete_batch_size);
    do {
      HCPRP_ASSIGN_OR_RETURN(auto page, env.store->Query(q));
      for (const auto& d : page.documents) {
        Status started = Error::Internal("not attempted");
        for (int attempt = 0; attempt <= env.options.max_store_retries; ++attempt) {
          auto current = env.store->Read(store::kResources, pk, d.id);
          if (!current.ok()) {
            if (current.error().IsNotFound()) {
              started = Status::Ok();
              break;
            }
            return current.error();
          }
          auto parsed = arm::ResourceDocument::FromBody(current->body);
          if (!parsed.ok()) {
            started = Status::Ok();
            break;
          }
          LoadedResource r{current->id, current->etag, std::move(parsed).value()};
          auto op = StartDelete(env, nullptr, r);
          if (op.ok()) {
            if (type == arm::kClusterDocType && !r.doc.internal_id.empty()) {
              Status gone = env.cs->Delete(r.doc.internal_id);
              if (!gone.ok() && !gone.error().IsNotFound()) {
                env.logger.Warn("cluster service delete deferred to the backend",
                                {{"resource_id", r.doc.resource_id}, {"error", gone.error().ToString()}});
              }
            }
            started = Status::Ok();
            break;
          }
          started = op.error();
          // The backend may finish a delete between the read and the batch (the resource or a child
          // is gone: NotFound): read again, as after a concurrent write.
          if (!op.error().IsPreconditionFailed() && !op.error().IsAlreadyExists() &&
              !op.error().IsNotFound()) {
            break;
          }
        }
        if (!started.ok()) return started;
      }
      q.continuation = page.continuation;
    } while (!q.continuation.empty());
  }
  return Status::Ok();
}

}  // namespace

Response HandleSubscription(Env& env, RequestContext& ctx) {
  const std::string& sub = ctx.route.subscription_id;
  const std::string pk = arm::PartitionKey(sub);
  if (ctx.method == bhttp::verb::get) {
    auto doc = env.store->Read(store::kResources, pk, pk);
    if (!doc.ok()) {
      if (doc.error().IsNotFound()) {
        return ErrorReply(CloudError(404, arm::codes::kSubscriptionNotFound,
                                     "The subscription '" + sub + "' was not found."));
      }
      return ErrorReply(arm::FromError(doc.error()));
    }
    auto parsed = arm::SubscriptionDocument::FromBody(doc->id, doc->body);
    if (!parsed.ok()) return ErrorReply(arm::FromError(parsed.error()));
    return JsonReply(200, parsed->properties);
  }

  // PUT: the body is stored verbatim; only "state" matters to the RP.
  if (ctx.req->body().empty()) {
    return ErrorReply(
        CloudError::InvalidRequestContent("The request content was invalid: the body is empty."));
  }
  auto body = ParseJson(ctx.req->body(), env.options.max_json_depth);
  if (!body.ok() || !body->is_object()) {
    return ErrorReply(CloudError::InvalidRequestContent(
        "The request content was invalid and could not be deserialized: " +
        (body.ok() ? std::string("the body must be a JSON object.") : body.error().message())));
  }
  const json::object& props = body->as_object();
  auto state_text = GetString(props, "state");
  if (!state_text) {
    return ErrorReply(CloudError::InvalidRequestContent("The subscription state is missing.", "state"));
  }
  auto state = arm::ParseSubscriptionState(*state_text);
  if (!state.ok()) {
    return ErrorReply(CloudError::InvalidRequestContent(
        "The subscription state '" + std::string(*state_text) + "' is not valid.", "state"));
  }
  if (const auto* p = props.if_contains("properties"); p != nullptr && !p->is_object() && !p->is_null()) {
    return ErrorReply(CloudError::InvalidRequestContent("properties must be an object.", "properties"));
  }
  if (const auto* r = props.if_contains("registrationDate"); r != nullptr && !r->is_string()) {
    return ErrorReply(
        CloudError::InvalidRequestContent("registrationDate must be a string.", "registrationDate"));
  }
  // As the real service validates a subscription: a registration date is given, without
  // surrounding whitespace.
  auto date = GetString(props, "registrationDate");
  if (!date) return ErrorReply(CloudError::InvalidRequestContent("Required value", "registrationDate"));
  if (!date->empty() && (std::isspace(static_cast<unsigned char>(date->front())) != 0 ||
                         std::isspace(static_cast<unsigned char>(date->back())) != 0)) {
    return ErrorReply(CloudError::InvalidRequestContent(
        "Invalid value: " + json::serialize(json::value(*date)) + ": must not contain extra whitespace",
        "registrationDate"));
  }
  arm::SubscriptionDocument doc;
  doc.id = pk;
  doc.properties = props;
  doc.state = *state;
  auto written = env.store->Upsert(store::kResources, pk, pk, doc.ToBody());
  if (!written.ok()) return ErrorReply(arm::FromError(written.error()));
  if (*state == arm::SubscriptionState::kDeleted) {
    Status cleaned = DeleteEverything(env, sub);
    if (!cleaned.ok()) {
      // The subscription document says Deleted; a repeated PUT resumes the cleanup.
      env.logger.Error("subscription cleanup incomplete",
                       {{"subscription_id", sub}, {"error", cleaned.error().ToString()}});
      return ErrorReply(arm::FromError(cleaned.error()));
    }
  }
  return JsonReply(200, props);
}

}  // namespace hcprp::frontend
