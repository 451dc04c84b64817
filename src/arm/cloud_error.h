// ARM errors: the CloudError a client sees, and the single mapping from internal errors (core Error
// codes) to an HTTP status and an ARM error body. Messages of internal errors never reach clients;
// handlers that want a specific client message build a CloudError themselves.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/result.h"

namespace hcprp::arm {

// Error codes hcprp answers with (ARM's vocabulary).
namespace codes {
inline constexpr std::string_view kInternalServerError = "InternalServerError";
inline constexpr std::string_view kServiceUnavailable = "ServiceUnavailable";
inline constexpr std::string_view kInvalidParameter = "InvalidParameter";
inline constexpr std::string_view kInvalidRequestContent = "InvalidRequestContent";
inline constexpr std::string_view kInvalidResource = "InvalidResource";
inline constexpr std::string_view kInvalidResourceType = "InvalidResourceType";
inline constexpr std::string_view kMultipleErrorsOccurred = "MultipleErrorsOccurred";
inline constexpr std::string_view kUnsupportedMediaType = "UnsupportedMediaType";
inline constexpr std::string_view kCanceled = "Canceled";
inline constexpr std::string_view kConflict = "Conflict";
inline constexpr std::string_view kNotFound = "NotFound";
inline constexpr std::string_view kResourceNotFound = "ResourceNotFound";
inline constexpr std::string_view kParentResourceNotFound = "ParentResourceNotFound";
inline constexpr std::string_view kInvalidSubscriptionState = "InvalidSubscriptionState";
inline constexpr std::string_view kSubscriptionNotFound = "SubscriptionNotFound";
inline constexpr std::string_view kInvalidSubscriptionId = "InvalidSubscriptionID";
inline constexpr std::string_view kInvalidResourceName = "InvalidResourceName";
inline constexpr std::string_view kInvalidResourceGroupName = "InvalidResourceGroupName";
inline constexpr std::string_view kPreconditionFailed = "PreconditionFailed";
inline constexpr std::string_view kMethodNotAllowed = "MethodNotAllowed";
inline constexpr std::string_view kTooManyRequests = "TooManyRequests";
inline constexpr std::string_view kRequestEntityTooLarge = "RequestEntityTooLarge";
inline constexpr std::string_view kAuthenticationFailed = "AuthenticationFailed";
}  // namespace codes

struct CloudErrorBody {
  std::string code;
  std::string message;
  std::string target;
  std::vector<CloudErrorBody> details;

  json::object ToJson() const;
};

// An error answer: HTTP status + {"error": {...}}.
struct CloudError {
  int status = 500;
  CloudErrorBody body;

  CloudError() = default;
  CloudError(int http_status, std::string_view code, std::string message, std::string target = "");

  // {"error":{"code","message","target"?,"details"?}}
  json::object ToJson() const;
  std::string ToJsonString() const;

  // Common errors.
  static CloudError Internal();
  static CloudError ResourceNotFound(std::string_view resource_id, std::string_view type,
                                     std::string_view name, std::string_view resource_group);
  static CloudError Conflict(std::string_view target, std::string message);
  static CloudError InvalidRequestContent(std::string message, std::string target = "");
  // Combines several problems: one becomes the error itself, more become MultipleErrorsOccurred
  // with every problem in details. REQUIRES: !problems.empty().
  static CloudError FromProblems(std::vector<CloudErrorBody> problems);
};

// The one mapping from an internal error to what a client sees:
//   kNotFound -> 404 NotFound          kAlreadyExists, kConflict -> 409 Conflict
//   kPreconditionFailed -> 412         kInvalidArgument -> 400 InvalidRequestContent
//   kThrottled -> 429                  kUnavailable, kIoError, kTimeout -> 503 ServiceUnavailable
//   kCanceled -> 409 Canceled
//   anything else -> 500 InternalServerError
// The message is a generic one per status; the internal message is for logs only.
CloudError FromError(const Error& error);

// Whether a response with this status should carry Retry-After (429, 503).
bool IsRetryableStatus(int status);

// Retry-After (seconds) of a 503 that names no better value: the store or the Cluster Service is
// down or restarting. A PostgreSQL restart takes a few seconds; ARM and SDK clients retry after it.
inline constexpr int kUnavailableRetryAfterSeconds = 5;
// Retry-After (seconds) of a 429 that names no better value.
inline constexpr int kThrottledRetryAfterSeconds = 10;

// The Retry-After every answer with this status carries unless its handler set one: the values
// above for 503 and 429, 0 (no header) for any other status. The frontend applies it to every
// response in one place, so each 503 (store unavailable, Cluster Service unavailable, readiness)
// and 429 tells the client when to come back.
int DefaultRetryAfterSeconds(int status);

}  // namespace hcprp::arm
