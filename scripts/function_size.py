#!/usr/bin/env python3
"""The function-size limits of scripts/lint.sh: no function defined in a production source under src/
and bench/ spans more than LIMIT lines, and none in a test source (whose tables of cases run long) more
than TEST_LIMIT.

Universal Ctags (Debian's universal-ctags) finds every function definition and the line of its closing
brace in a fraction of a second for the whole tree; clang-tidy's readability-function-size, which
answers the same question, parses every source with its includes and cost minutes of CI. A function
here spans from the line of its name to the line of its closing brace, which is the body clang-tidy
measures plus the lines of a signature that wraps, so this limit is never looser than clang-tidy's.

Usage: scripts/function_size.py [--limit N] [--test-limit N] [FILE ...]   (default: every source git knows)
Exits 1 and lists the functions over their limit, longest first."""

import argparse
import re
import subprocess
import sys

TESTS = re.compile(r"(_test\.cpp$|/testing/|^src/store/store_conformance\.cpp$)")


def sources():
    return subprocess.run(["git", "ls-files", "src/*.cpp", "src/*.h", "bench/*.cpp", "bench/*.h"],
                          check=True, capture_output=True, text=True).stdout.split()


def functions(files):
    """(file, first line, last line, name) of every function definition in `files`."""
    out = subprocess.run(["ctags", "--languages=C++", "--map-C++=+.h", "--kinds-C++=f", "--fields=+ne",
                          "--extras=-F", "-L", "-", "-x", "--_xformat=%F\t%n\t%{end}\t%N", "-o", "-"],
                         input="\n".join(files), check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        path, first, last, name = line.split("\t", 3)
        if last.isdigit():
            yield path, int(first), int(last), name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=120)
    ap.add_argument("--test-limit", type=int, default=800)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = args.files or sources()
    found = list(functions(files))
    if not found:
        sys.exit("function_size.py: ctags found no function at all; is universal-ctags installed?")
    over = []
    for path, first, last, name in found:
        limit = args.test_limit if TESTS.search(path) else args.limit
        if last - first > limit:
            over.append((last - first, path, first, name, limit))
    for lines, path, first, name, limit in sorted(over, reverse=True):
        print(f"{path}:{first}: {name} spans {lines} lines (limit {limit})")
    print(f"   {len(found)} functions in {len(files)} sources; {len(over)} over the limit "
          f"({args.limit} lines, {args.test_limit} in the tests)")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
