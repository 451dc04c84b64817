#!/usr/bin/env bash
# The style checks CI runs: clang-format (.clang-format) on every C++ file of the repository, Clang's
# thread-safety analysis (-Wthread-safety) on every source under src/, then
# clang-tidy (.clang-tidy, every warning an error, Clang's thread-safety analysis included) on the C++
# sources a change touches: the files that differ from the merge base with main, or on main from the
# last commit's first parent (HCPRP_LINT_BASE overrides the base; a changed header brings the source of the same name). Needs the build's
# compile_commands.json.
# Usage: scripts/lint.sh [build-dir]   (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
jobs=$(nproc)

echo "== clang-format"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run -Werror

# Clang's thread-safety analysis over every source under src/ (syntax only, with the build's include
# paths and defines): the GCC builds ignore the HCPRP_GUARDED_BY / HCPRP_REQUIRES annotations of
# core/mutex.h, so this is where they are checked. One line of clang++ arguments per source:
echo "== clang -Wthread-safety"
start=$SECONDS
python3 - "$build/compile_commands.json" "$PWD/src/" <<'PY' >"$build/thread_safety_args.txt"
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if not e["file"].startswith(sys.argv[2]) or "/fuzz/" in e["file"]:
        continue
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    keep, i = [], 1
    while i < len(args):
        if args[i] in ("-I", "-isystem", "-D") and i + 1 < len(args):
            keep += args[i:i + 2]
            i += 2
            continue
        if args[i].startswith(("-I", "-isystem", "-D", "-std=")):
            keep.append(args[i])
        i += 1
    print(shlex.join(keep + [e["file"]]))
PY
xargs -d '\n' -P "$jobs" -I{} sh -c 'clang++ -fsyntax-only -Wthread-safety -Werror {}' <"$build/thread_safety_args.txt"
echo "   $(wc -l <"$build/thread_safety_args.txt") sources in $((SECONDS - start)) s"

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
# GCC-only warning flags in the compile commands are not clang-tidy's business.
printf '%s\n' "${sources[@]}" |
  xargs -P "$jobs" -n 4 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option \
    --extra-arg=-Wthread-safety 2> >(grep -v -e '^Suppressed' -e 'Use -header-filter' -e 'warnings generated' >&2)
