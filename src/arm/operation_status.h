// The ARM operation status resource (Azure-AsyncOperation format) rendered from an operation document.
#pragma once

#include <string>
#include <string_view>

#include "arm/documents.h"
#include "core/json.h"

namespace hcprp::arm {

// Path of the status and result endpoints of an operation:
//   /subscriptions/{sub}/providers/Microsoft.RedHatOpenShift/locations/{loc}/hcpOperationStatuses/{id}
//   /subscriptions/{sub}/providers/Microsoft.RedHatOpenShift/locations/{loc}/hcpOperationResults/{id}
std::string OperationStatusPath(std::string_view subscription_id, std::string_view location,
                                std::string_view operation_id);
std::string OperationResultPath(std::string_view subscription_id, std::string_view location,
                                std::string_view operation_id);

// {"id": status_path, "name", "status", "startTime", "endTime" (terminal only), "error" (Failed or
// Canceled; a terminal failure without a recorded error gets InternalServerError)}.
json::object RenderOperationStatus(const OperationDocument& op, std::string_view status_path);

}  // namespace hcprp::arm
