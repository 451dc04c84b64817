#!/usr/bin/env bash
# Builds hcprp and runs every test: the release build's whole suite, then the unit tests of the core,
# store (SQLite and PostgreSQL engines), api, http, Cluster Service client, pki, check, metrics, admin,
# simulator, frontend and backend libraries again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: scripts/test.sh [--quick]   (--quick: the release pass only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/install-deps.sh

cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs"
# Timing-sensitive simulator and end-to-end tests get up to three runs on a loaded machine; a test
# that fails three times fails the suite. The end-to-end tests capture their ARM traffic (build/release/
# traffic); e2e_oav runs after them and validates it with oav (npm ci of tests/oav) against api-spec/.
ctest --preset release -j"$jobs" --timeout 600 --repeat until-pass:3 --output-on-failure

if [ "${1:-}" != "--quick" ]; then
  # The sanitizer pass covers the libraries whose tests are known clean under ASan/UBSan.
  asan_tests=(core_test store_test sqlite_store_test postgres_store_test api_test http_test http_tls_test tls_test clusterservice_test pki_test check_test
              metrics_test admin_test
              simulator_test frontend_test backend_test backend_ownership_test)
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs" --target "${asan_tests[@]}"
  failed=0
  for t in "${asan_tests[@]}"; do
    bin=$(find build/asan/src -name "$t" -type f -perm -u+x | head -n 1)
    echo "== $t (ASan + UBSan)"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" --gtest_brief=1 || failed=$((failed + 1))
  done
  echo "sanitizer pass: $(( ${#asan_tests[@]} - failed )) passed, $failed failed"
  [ "$failed" -eq 0 ]
fi
