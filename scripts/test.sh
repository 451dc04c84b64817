#!/usr/bin/env bash
# Builds hcprp and runs every test:
#  1. the release build of the programs and the end-to-end test drivers (target tests_e2e);
#  2. the style checks (scripts/lint.sh: clang-format everywhere, the function-size limit on every
#     production source, clang-tidy on the changed sources);
#  3. the end-to-end tests (label e2e), four at a time: they capture their ARM traffic
#     (build/release/traffic) and e2e_oav validates it with oav against api-spec/. A test that fails gets
#     up to two more runs; every retry is listed at the end of the step, since a test that needs one has a
#     defect to find. They wait on processes most of the time, so meanwhile the rest of the release build
#     (unit tests, benchmarks) and the two sanitizer builds run at the lowest CPU priority;
#  4. the release build's unit tests (labels unit and threads);
#  5. every unit test again under AddressSanitizer + UndefinedBehaviorSanitizer (labels unit, threads);
#     this build compiles every program, test and benchmark with Clang, whose thread-safety analysis
#     (-Wthread-safety, an error) checks the HCPRP_GUARDED_BY / HCPRP_REQUIRES annotations;
#  6. the tests of the code that runs threads under ThreadSanitizer (label threads).
# The sanitizer builds are Clang at -O0 with line tables, linked by lld. Every test binary is one CTest
# test (HCPRP_TEST_PER_BINARY): one process runs all its cases. Every compile goes through ccache, whose
# cache lives outside the clone ($CCACHE_DIR, by default ~/.cache/hcprp-ccache), so a second run on the
# same machine recompiles only what changed. Each step prints its duration.
# Usage: scripts/test.sh [--quick]   (--quick: the release build and its tests only, steps 1-4)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

step_started=$SECONDS
step() {
  echo "== $1 (previous step: $((SECONDS - step_started)) s, total $((SECONDS / 60)) min)"
  step_started=$SECONDS
}

scripts/install-deps.sh

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/hcprp-ccache}
export CCACHE_BASEDIR=$PWD CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G} CCACHE_NOHASHDIR=1
# What ccache needs to cache compiles that use a precompiled header (its manual, "Precompiled headers").
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
ccache --zero-stats >/dev/null

quick=false
[ "${1:-}" = "--quick" ] && quick=true

step "build (release): programs and end-to-end test drivers"
cmake --preset release -DHCPRP_TEST_PER_BINARY=ON >/dev/null
cmake --build --preset release -j"$jobs" --target tests_e2e

# Every test must carry a label a pass runs (unit, threads or e2e); one without would silently never run.
if ctest --preset release -N -LE '^(unit|threads|e2e)$' | grep -q 'Test *#'; then
  echo "tests without the label unit, threads or e2e, which no pass of this script runs:"
  ctest --preset release -N -LE '^(unit|threads|e2e)$' | grep 'Test *#'
  exit 1
fi

step "lint"
scripts/lint.sh build/release

# The rest of the builds, at the lowest CPU priority while the end-to-end tests run.
background_log=build/background-build.log
build_rest() {
  renice -n 19 -p $BASHPID >/dev/null # before the first compiler starts: they all inherit it
  cmake --build --preset release -j"$jobs"
  if ! $quick; then
    cmake --preset asan >/dev/null
    cmake --build --preset asan -j"$jobs"
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan -j"$jobs" --target tests_threads
  fi
}
build_rest >"$background_log" 2>&1 &
background=$!

step "end-to-end tests (release; the other builds run meanwhile)"
log=build/release/e2e.log
set +e
ctest --preset release -j$((2 * jobs)) --timeout 600 --no-tests=error -L '^e2e$' --repeat until-pass:3 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# ctest prints a failed run before the run that repeats it; a test named on a ***Failed line and then
# on a Passed line passed on a retry.
retried=$(awk '/\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception/ { for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) print $(i + 1) }' "$log" |
          sort | uniq -c | awk '{ printf "%s (%d failed run%s) ", $2, $1, $1 > 1 ? "s" : "" }')
if [ -n "$retried" ]; then
  echo "end-to-end tests that failed a run: $retried"
else
  echo "end-to-end tests that failed a run: none"
fi

if [ "$status" -ne 0 ]; then
  pkill -P "$background" || true
  exit "$status"
fi

step "the rest of the builds (release unit tests and benchmarks, sanitizers)"
if ! wait "$background"; then
  tail -n 60 "$background_log"
  echo "the builds that ran beside the end-to-end tests failed; the whole output: $background_log"
  exit 1
fi

step "unit tests (release)"
ctest --preset release -j"$jobs" --timeout 600 --no-tests=error -L '^(unit|threads)$'

if ! $quick; then
  step "AddressSanitizer + UndefinedBehaviorSanitizer (labels unit and threads)"
  ctest --preset asan -j"$jobs" --timeout 600 --no-tests=error

  step "ThreadSanitizer (label threads)"
  ctest --preset tsan -j"$jobs" --timeout 600 --no-tests=error
fi

step "done"
ccache --show-stats | grep -E 'Hits|Misses|Cache size' || true
