#include "arm/operation_status.h"

#include "arm/resource_id.h"
#include "core/time.h"

namespace hcprp::arm {
namespace {
std::string OperationPath(std::string_view sub, std::string_view loc, std::string_view kind,
                          std::string_view id) {
  std::string p = "/subscriptions/";
  p += sub;
  p += "/providers/";
  p += kProviderNamespace;
  p += "/locations/";
  p += loc;
  p += "/";
  p += kind;
  p += "/";
  p += id;
  return p;
}
}  // namespace

std::string OperationStatusPath(std::string_view subscription_id, std::string_view location,
                                std::string_view operation_id) {
  return OperationPath(subscription_id, location, "hcpOperationStatuses", operation_id);
}

std::string OperationResultPath(std::string_view subscription_id, std::string_view location,
                                std::string_view operation_id) {
  return OperationPath(subscription_id, location, "hcpOperationResults", operation_id);
}

json::object RenderOperationStatus(const OperationDocument& op, std::string_view status_path) {
  json::object o;
  o["id"] = status_path;
  o["name"] = op.id;
  o["status"] = op.status;
  o["startTime"] = FormatRfc3339(op.start_time, true);
  bool terminal = IsTerminalState(op.status);
  if (terminal) o["endTime"] = FormatRfc3339(op.last_transition_time, true);
  if (EqualsIgnoreCase(op.status, kStateFailed) || EqualsIgnoreCase(op.status, kStateCanceled)) {
    OperationError e;
    if (op.error) {
      e = *op.error;
    } else if (EqualsIgnoreCase(op.status, kStateCanceled)) {
      e.code = std::string(kCanceledCode);
      e.message = "The operation was canceled.";
    } else {
      e.code = "InternalServerError";
      e.message = "The operation failed.";
    }
    o["error"] = e.ToJson();
  }
  return o;
}

}  // namespace hcprp::arm
