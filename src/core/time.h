// Time points as text and as numbers: RFC 3339 timestamps (always UTC) and milliseconds since the
// Unix epoch (the store's timestamps).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/result.h"

namespace hcprp {

// "2025-03-14T01:59:26Z", or with fractional seconds when `with_fraction` ("2025-03-14T01:59:26.123456Z").
std::string FormatRfc3339(TimePoint t, bool with_fraction = false);

// Accepts "Z" or a numeric offset ("+02:00") and up to nanosecond fractions; the result is UTC.
Result<TimePoint> ParseRfc3339(std::string_view text);

// Milliseconds since the Unix epoch, and back.
int64_t ToUnixMillis(TimePoint t);
TimePoint FromUnixMillis(int64_t ms);
// A duration in whole milliseconds (truncated).
template <typename Rep, typename Period>
int64_t ToMillis(std::chrono::duration<Rep, Period> d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace hcprp
