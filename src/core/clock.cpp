#include "core/clock.h"

namespace hcprp {

// 2025-01-01T00:00:00Z.
FakeClock::FakeClock()
    : now_ns_(std::chrono::duration_cast<Duration>(std::chrono::seconds(1735689600)).count()) {}

}  // namespace hcprp
