// Names of the ARM request and response headers hcprp reads or writes.
#pragma once

#include <string_view>

namespace hcprp::arm::headers {

inline constexpr std::string_view kRequestId = "x-ms-request-id";
inline constexpr std::string_view kClientRequestId = "x-ms-client-request-id";
inline constexpr std::string_view kReturnClientRequestId = "x-ms-return-client-request-id";
inline constexpr std::string_view kCorrelationRequestId = "x-ms-correlation-request-id";
inline constexpr std::string_view kHomeTenantId = "x-ms-home-tenant-id";
inline constexpr std::string_view kClientObjectId = "x-ms-client-object-id";
inline constexpr std::string_view kClientPuid = "x-ms-client-principal-id";
inline constexpr std::string_view kSystemData = "x-ms-arm-resource-system-data";
inline constexpr std::string_view kAsyncNotificationUri = "Azure-AsyncNotificationUri";
inline constexpr std::string_view kErrorCode = "x-ms-error-code";
inline constexpr std::string_view kAzureAsyncOperation = "Azure-AsyncOperation";
inline constexpr std::string_view kLocation = "Location";
inline constexpr std::string_view kRetryAfter = "Retry-After";
inline constexpr std::string_view kReferer = "Referer";

}  // namespace hcprp::arm::headers
