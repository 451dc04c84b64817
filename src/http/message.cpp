#include "http/message.h"

namespace hcprp::http {

Response MakeResponse(StatusCode status, std::string body, std::string_view content_type) {
  Response res{status, 11};
  if (!content_type.empty()) res.set(Field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response JsonResponse(StatusCode status, std::string json_body) {
  return MakeResponse(status, std::move(json_body), "application/json");
}

Request MakeRequest(Verb method, std::string_view target, std::string body, std::string_view content_type) {
  Request req{method, target, 11};
  if (!body.empty() && !content_type.empty()) req.set(Field::content_type, content_type);
  req.body() = std::move(body);
  return req;
}

bool IsIdempotent(Verb method) {
  switch (method) {
    case Verb::get:
    case Verb::head:
    case Verb::put:
    case Verb::delete_:
    case Verb::options:
    case Verb::trace:
      return true;
    default:
      return false;
  }
}

}  // namespace hcprp::http
