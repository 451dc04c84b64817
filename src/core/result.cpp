#include "core/result.h"

namespace hcprp {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kPreconditionFailed:
      return "PreconditionFailed";
    case ErrorCode::kConflict:
      return "Conflict";
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kTimeout:
      return "Timeout";
    case ErrorCode::kIoError:
      return "IoError";
    case ErrorCode::kCorruption:
      return "Corruption";
    case ErrorCode::kThrottled:
      return "Throttled";
    case ErrorCode::kCanceled:
      return "Canceled";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Error::ToString() const {
  std::string s(ErrorCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace hcprp
