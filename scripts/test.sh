#!/usr/bin/env bash
# Builds hcprp and runs every test:
#  1. the style checks (scripts/lint.sh: clang-format everywhere, Clang's -Wthread-safety on every source
#     under src/, clang-tidy on the changed sources);
#  2. the release build's unit tests, once each: a unit test that fails fails the suite;
#  3. the end-to-end tests (ctest label e2e), which drive processes on a loaded machine and get up to
#     three runs each; they capture their ARM traffic (build/release/traffic) and e2e_oav validates it
#     with oav (npm ci of tests/oav) against api-spec/;
#  4. every unit test binary again under AddressSanitizer + UndefinedBehaviorSanitizer (the sanitizer
#     builds compile at -O1 with line tables only, -g1: a third of the -O2 -g compile time);
#  5. the unit tests of the code that runs threads under ThreadSanitizer.
# Each step prints its duration. Usage: scripts/test.sh [--quick]   (--quick: steps 1-3 only)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

step_started=$SECONDS
step() {
  echo "== $1 (previous step: $((SECONDS - step_started)) s)"
  step_started=$SECONDS
}

scripts/install-deps.sh

step "build (release)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs"

step "lint"
scripts/lint.sh build/release

step "unit tests (release)"
ctest --preset release -j"$jobs" --timeout 600 -L unit --output-on-failure

step "end-to-end tests (release, up to three runs each)"
ctest --preset release -j"$jobs" --timeout 600 -LE unit --repeat until-pass:3 --output-on-failure

if [ "${1:-}" != "--quick" ]; then
  # Runs test binaries of one sanitizer build; counts the failures into $failed.
  run_sanitized() {
    local preset=$1
    shift
    for t in "$@"; do
      bin=$(find "build/$preset/src" -name "$t" -type f -perm -u+x | head -n 1)
      echo "== $t ($preset)"
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        "$bin" --gtest_brief=1 || failed=$((failed + 1))
    done
  }
  failed=0

  step "AddressSanitizer + UndefinedBehaviorSanitizer"
  # Every unit test binary.
  asan_tests=(core_test store_test sqlite_store_test postgres_store_test arm_test api_test http_test http_tls_test tls_test
              clusterservice_test pki_test check_test metrics_test admin_test simulator_test provisioning_test
              frontend_test backend_test backend_ownership_test backend_state_mapping_test)
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs" --target "${asan_tests[@]}"
  run_sanitized asan "${asan_tests[@]}"

  step "ThreadSanitizer"
  # The tests of the code that runs threads: the HTTP server and client, the store engines (change
  # watcher, concurrent writers), the metrics registry, the backend's loops and parallel checks, the
  # shard leases, the simulator (scheduler, event long-polls, group commit) and the provisioning engine
  # (workers, dispatcher, committer).
  tsan_tests=(core_test http_test store_test sqlite_store_test metrics_test backend_test backend_ownership_test
              simulator_test provisioning_test)
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j"$jobs" --target "${tsan_tests[@]}"
  run_sanitized tsan "${tsan_tests[@]}"

  step "done"
  total=$(( ${#asan_tests[@]} + ${#tsan_tests[@]} ))
  echo "sanitizer passes: $((total - failed)) passed, $failed failed"
  [ "$failed" -eq 0 ]
fi
