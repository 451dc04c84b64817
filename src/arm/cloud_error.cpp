#include "arm/cloud_error.h"

#include <utility>

namespace hcprp::arm {

json::object CloudErrorBody::ToJson() const {
  json::object o;
  o["code"] = code;
  o["message"] = message;
  if (!target.empty()) o["target"] = target;
  if (!details.empty()) {
    json::array d;
    for (const auto& x : details) d.push_back(x.ToJson());
    o["details"] = std::move(d);
  }
  return o;
}

CloudError::CloudError(int http_status, std::string_view code, std::string message, std::string target)
    : status(http_status) {
  body.code = std::string(code);
  body.message = std::move(message);
  body.target = std::move(target);
}

json::object CloudError::ToJson() const {
  json::object o;
  o["error"] = body.ToJson();
  return o;
}

std::string CloudError::ToJsonString() const { return json::serialize(ToJson()); }

CloudError CloudError::Internal() { return {500, codes::kInternalServerError, "Internal server error."}; }

CloudError CloudError::ResourceNotFound(std::string_view resource_id, std::string_view type,
                                        std::string_view name, std::string_view resource_group) {
  return {404, codes::kResourceNotFound,
          "The resource '" + std::string(type) + "/" + std::string(name) + "' under resource group '" +
              std::string(resource_group) + "' was not found.",
          std::string(resource_id)};
}

CloudError CloudError::Conflict(std::string_view target, std::string message) {
  return {409, codes::kConflict, std::move(message), std::string(target)};
}

CloudError CloudError::InvalidRequestContent(std::string message, std::string target) {
  return {400, codes::kInvalidRequestContent, std::move(message), std::move(target)};
}

CloudError CloudError::FromProblems(std::vector<CloudErrorBody> problems) {
  CloudError e;
  e.status = 400;
  if (problems.size() == 1) {
    e.body = std::move(problems.front());
    return e;
  }
  e.body.code = std::string(codes::kMultipleErrorsOccurred);
  e.body.message = "Content validation failed on multiple fields";
  e.body.details = std::move(problems);
  return e;
}

CloudError FromError(const Error& error) {
  switch (error.code()) {
    case ErrorCode::kNotFound:
      return {404, codes::kNotFound, "The requested resource was not found."};
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kConflict:
      return {409, codes::kConflict,
              "The request conflicts with a concurrent change to the resource; retry the request."};
    case ErrorCode::kPreconditionFailed:
      return {412, codes::kPreconditionFailed,
              "The condition specified in the request headers does not hold."};
    case ErrorCode::kInvalidArgument:
      return {400, codes::kInvalidRequestContent, "The request content was invalid."};
    case ErrorCode::kThrottled:
      return {429, codes::kTooManyRequests, "Too many requests; retry later."};
    case ErrorCode::kUnavailable:
      return {503, codes::kServiceUnavailable, "The service is temporarily unavailable; retry later."};
    case ErrorCode::kTimeout:
      // A dependency that does not answer in time (the Cluster Service across a partition, a query
      // past its timeout) is as transient as one that refuses: the same 503 and Retry-After.
      return {503, codes::kServiceUnavailable, "A dependency did not answer in time; retry later."};
    case ErrorCode::kCanceled:
      return {409, codes::kCanceled, "The request was canceled."};
    case ErrorCode::kIoError:
      // The storage failed (disk full, read-only file, I/O error): nothing was written, and the same
      // request succeeds once it is repaired.
      return {503, codes::kServiceUnavailable, "The service cannot store data at the moment; retry later."};
    case ErrorCode::kCorruption:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kInternal:
      break;
  }
  return CloudError::Internal();
}

bool IsRetryableStatus(int status) { return status == 429 || status == 503; }

int DefaultRetryAfterSeconds(int status) {
  if (status == 503) return kUnavailableRetryAfterSeconds;
  if (status == 429) return kThrottledRetryAfterSeconds;
  return 0;
}

}  // namespace hcprp::arm
