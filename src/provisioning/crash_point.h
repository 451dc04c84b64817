// Named crash points of the provisioning engine and the simulated Azure, for crash tests: a process
// started with HCPRP_CRASH_AT=NAME (or NAME@N: the Nth time it is reached) kills itself with SIGKILL
// there, as `kill -9` at that instant would. Without the variable a point costs a flag test.
// The names are listed in docs/architecture.md (crash analysis).
#pragma once

#include <string_view>

namespace hcprp::provisioning {

void CrashPoint(std::string_view name);
// Whether any point is armed (to skip building names that nobody waits for).
bool CrashPointsArmed();

}  // namespace hcprp::provisioning
