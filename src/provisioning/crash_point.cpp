#include "provisioning/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hcprp::provisioning {
namespace {

struct Armed {
  std::string name;  // empty: no crash point armed
  long nth = 1;
};

const Armed& TheArmed() {
  static const Armed kArmed = [] {
    Armed a;
    const char* v = std::getenv("HCPRP_CRASH_AT");
    if (v == nullptr || *v == '\0') return a;
    std::string s(v);
    size_t at = s.rfind('@');
    if (at != std::string::npos) {
      a.nth = std::max(1L, std::strtol(s.c_str() + at + 1, nullptr, 10));
      s.resize(at);
    }
    a.name = s;
    return a;
  }();
  return kArmed;
}

std::atomic<long> g_hits{0};

}  // namespace

bool CrashPointsArmed() { return !TheArmed().name.empty(); }

void CrashPoint(std::string_view name) {
  const Armed& a = TheArmed();
  if (a.name.empty() || name != a.name) return;
  if (g_hits.fetch_add(1) + 1 != a.nth) return;
  std::fprintf(stderr, "crash point %s reached: killing the process\n", a.name.c_str());
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached
}

}  // namespace hcprp::provisioning
