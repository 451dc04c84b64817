#include "backend/http_notifier.h"

#include "http/message.h"

namespace hcprp::backend {

Status HttpNotifier::Notify(std::string_view uri, const json::object& body) {
  http::Request req = http::MakeRequest(http::Verb::post, uri, ToJson(body));
  HCPRP_ASSIGN_OR_RETURN(auto res, client_->Send(std::move(req), timeout_));
  unsigned code = res.result_int();
  if (code >= 200 && code < 300) return Status::Ok();
  std::string message = "notification answered " + std::to_string(code);
  if (code == 429) return Error::Throttled(message);
  if (code >= 500) return Error::Unavailable(message);
  return Error::InvalidArgument(message);
}

}  // namespace hcprp::backend
