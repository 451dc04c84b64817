#!/usr/bin/env bash
# Builds hcprp and runs every test:
#  1. the release build (every program, test and benchmark);
#  2. the style checks (scripts/lint.sh: clang-format everywhere; Clang's -Wthread-safety and the
#     function-size limit on every source under src/; clang-tidy on the changed sources);
#  3. the release build's unit tests (ctest labels unit and threads), once each;
#  4. the end-to-end tests (label e2e): they capture their ARM traffic (build/release/traffic) and
#     e2e_oav validates it with oav against api-spec/. A test that fails gets up to two more runs; every
#     retry is listed at the end of the step, since a test that needs one has a defect to find;
#  5. every unit test again under AddressSanitizer + UndefinedBehaviorSanitizer (labels unit, threads);
#  6. the tests of the code that runs threads under ThreadSanitizer (label threads).
# The sanitizer builds compile only the test binaries of their label (targets tests_unit and
# tests_threads) at -O1 with line tables only. Every compile goes through ccache, whose cache lives
# outside the clone ($CCACHE_DIR, by default ~/.cache/hcprp-ccache), so a second run on the same machine
# recompiles only what changed. Each step prints its duration.
# Usage: scripts/test.sh [--quick]   (--quick: steps 1-4 only)
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

step "build (release)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs"

# Every test must carry a label a pass runs (unit, threads or e2e); one without would silently never run.
if ctest --preset release -N -LE '^(unit|threads|e2e)$' | grep -q 'Test *#'; then
  echo "tests without the label unit, threads or e2e, which no pass of this script runs:"
  ctest --preset release -N -LE '^(unit|threads|e2e)$' | grep 'Test *#'
  exit 1
fi

step "lint"
scripts/lint.sh build/release

step "unit tests (release)"
ctest --preset release -j"$jobs" --timeout 600 --no-tests=error -L '^(unit|threads)$'

step "end-to-end tests (release)"
log=build/release/e2e.log
set +e
ctest --preset release -j"$jobs" --timeout 600 --no-tests=error -L '^e2e$' --repeat until-pass:3 2>&1 | tee "$log"
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
[ "$status" -eq 0 ]

if [ "${1:-}" != "--quick" ]; then
  step "AddressSanitizer + UndefinedBehaviorSanitizer (labels unit and threads)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs" --target tests_unit tests_threads
  ctest --preset asan -j"$jobs" --timeout 600 --no-tests=error

  step "ThreadSanitizer (label threads)"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j"$jobs" --target tests_threads
  ctest --preset tsan -j"$jobs" --timeout 600 --no-tests=error
fi

step "done"
ccache --show-stats | grep -E 'Hits|Misses|Cache size' || true
