#!/usr/bin/env bash
# The style checks CI runs: clang-format (.clang-format) on every C++ file of the repository; a limit of
# 120 lines a function on every production source under src/ and bench/, 800 in the tests
# (scripts/function_size.py); then
# clang-tidy (.clang-tidy, every warning an error, Clang's thread-safety analysis included) on the C++
# sources a change touches: the files that differ from the merge base with main, or on main from the
# last commit's first parent (HCPRP_LINT_BASE overrides the base; a changed header brings the source of
# the same name). Needs the build's compile_commands.json. Clang's thread-safety analysis of every source
# is part of the Clang builds (the asan and tsan presets; scripts/test.sh builds both).
# Usage: scripts/lint.sh [build-dir]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
jobs=$(nproc)

# The builds use GCC's precompiled headers, which Clang cannot read: the checks below take a copy of the
# compile commands without them (so they also find a source that does not include what it uses).
db=$build/lint
mkdir -p "$db"
sed -e 's| -Winvalid-pch -include [^ ]*cmake_pch\.hxx||' "$build/compile_commands.json" >"$db/compile_commands.json"

echo "== clang-format"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run -Werror

echo "== function size: at most 120 lines a function, 800 in the tests"
scripts/function_size.py --limit 120

cache=${HCPRP_LINT_CACHE:-$HOME/.cache/hcprp-lint}
base=${HCPRP_LINT_BASE:-$(git merge-base HEAD main 2>/dev/null || git rev-parse -q --verify HEAD~1 || true)}
# On main itself (as in CI's clone) the change is what the last commit brought: for a merge, everything
# since its first parent.
if [ "$base" = "$(git rev-parse HEAD)" ]; then base=$(git rev-parse -q --verify HEAD^1 || true); fi
if [ -z "$base" ]; then
  echo "== clang-tidy: no earlier commit in this clone (shallow?) to tell the changed sources; skipped"
  exit 0
fi
declare -A seen=()
sources=()
while IFS= read -r f; do
  case "$f" in
    *.h) f="${f%.h}.cpp" ;;
  esac
  [[ "$f" == src/*.cpp || "$f" == bench/*.cpp ]] || continue
  [[ "$f" == */fuzz/* ]] && continue
  [ -f "$f" ] || continue
  grep -q "\"file\": \"$PWD/$f\"" "$build/compile_commands.json" || continue
  [ -n "${seen[$f]:-}" ] && continue
  seen[$f]=1
  sources+=("$f")
done < <(git diff --name-only --diff-filter=AMR "$base" -- '*.cpp' '*.h')

echo "== clang-tidy: ${#sources[@]} changed sources since $(git rev-parse --short "$base")"
[ "${#sources[@]}" -eq 0 ] && exit 0
# .clang-tidy's checks; GCC-only warning flags in the compile commands are not clang-tidy's business.
scripts/tidy_cached.py --db "$db" --build "$build" --cache "$cache" --jobs "$jobs" --extra-arg=-Wno-unknown-warning-option \
  --extra-arg=-Wthread-safety "${sources[@]}"
