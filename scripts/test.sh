#!/usr/bin/env bash
# Builds hcprp and runs every test: the release build's whole suite, then the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (the PostgreSQL engine's tests, which start a server per
# test, run in the release pass only). Usage: scripts/test.sh [--quick]  (--quick: release only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/install-deps.sh

cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs"
ctest --preset release -j"$jobs" --timeout 600

if [ "${1:-}" != "--quick" ]; then
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --preset asan -j"$jobs" -L unit -E "Postgres|Pg" --timeout 900
fi
