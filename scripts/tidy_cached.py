#!/usr/bin/env python3
"""Runs clang-tidy over C++ sources, a few at a time, and remembers the sources it found clean.

A source is checked again only when what clang-tidy would read differs from an earlier clean run: its
compile command, the checks and their options, the .clang-tidy file, clang-tidy's version, and the
bytes of the source and of every file it includes. The included files are the ones the build recorded
for the source's object (ninja's dependency log, next to the compile commands); for a source the build
has not compiled, the preprocessor's output stands in for them. The checkout's own path is left out, so
that clones in other folders share the record. A source with findings is never recorded, so it is
checked, and fails, every time.

Usage: tidy_cached.py --db DIR [--build DIR] [--cache DIR] [--jobs N] [--checks C] [--config Y] [--header-filter R]
                      [--extra-arg A ...] FILE...
Exit status: 0 when every source is clean, 1 otherwise (clang-tidy's findings on standard error).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

NOISE = ("Suppressed ", "Use -header-filter", " warnings generated", " warning generated")


def compile_args(entry):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    return args


def preprocess_args(args):
    """The compile command turned into a preprocessing one (clang++ -E -C, output to standard output)."""
    out, i = ["clang++"], 1
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-MQ"):
            i += 2
            continue
        if a in ("-c", "-MD", "-MMD"):
            i += 1
            continue
        out.append(a)
        i += 1
    return out + ["-E", "-C", "-Wno-unknown-warning-option", "-o", "-"]


def build_deps(build_dir):
    """{object path relative to the build directory: [the files its compile read]} from ninja's log."""
    r = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True, text=True)
    deps, current = {}, None
    for line in r.stdout.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            current = line.split(":", 1)[0] if "(VALID)" in line else None
            if current:
                deps[current] = []
        elif current:
            deps[current].append(line.strip())
    return deps


class Digests:
    """The SHA-256 of each file's bytes, read once however many sources include it."""

    def __init__(self):
        self.known = {}

    def of(self, path):
        if path not in self.known:
            try:
                with open(path, "rb") as f:
                    self.known[path] = hashlib.sha256(f.read()).digest()
            except OSError:
                self.known[path] = b"missing"
        return self.known[path]


def key_of(entry, common, root, deps, digests):
    args = compile_args(entry)
    h = hashlib.sha256()
    h.update(common)
    h.update(" ".join(args).replace(root, "").encode())
    obj = args[args.index("-o") + 1] if "-o" in args else None
    inputs = deps.get(obj) if obj else None
    if inputs:
        h.update(digests.of(entry["file"]))
        for dep in inputs:
            h.update(os.path.normpath(os.path.join(entry["directory"], dep)).replace(root, "").encode())
            h.update(digests.of(os.path.join(entry["directory"], dep)))
        return h.hexdigest()
    pre = subprocess.run(preprocess_args(args), cwd=entry["directory"], capture_output=True)
    if pre.returncode != 0:
        return None  # clang-tidy will say why
    h.update(pre.stdout.replace(root.encode(), b""))
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--build", help="the build directory whose ninja log names each source's includes")
    p.add_argument("--cache", default=os.path.expanduser("~/.cache/hcprp-lint"))
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--checks")
    p.add_argument("--config")
    p.add_argument("--header-filter")
    p.add_argument("--extra-arg", action="append", default=[])
    p.add_argument("files", nargs="*")
    o = p.parse_args()

    root = os.getcwd() + "/"
    entries = {e["file"]: e for e in json.load(open(os.path.join(o.db, "compile_commands.json")))}
    tidy = ["clang-tidy", "-p", o.db, "--quiet", "--warnings-as-errors=*"]
    if o.checks:
        tidy.append("--checks=" + o.checks)
    if o.config:
        tidy.append("--config=" + o.config)
    if o.header_filter:
        tidy.append("--header-filter=" + o.header_filter)
    tidy += ["--extra-arg=" + a for a in o.extra_arg]

    version = subprocess.run(["clang-tidy", "--version"], capture_output=True).stdout
    dot_tidy = open(".clang-tidy", "rb").read() if os.path.exists(".clang-tidy") else b""
    common = version + dot_tidy + " ".join(tidy[3:]).encode() + b"\0"
    os.makedirs(o.cache, exist_ok=True)
    deps = build_deps(o.build) if o.build else {}
    digests = Digests()

    def run(path):
        entry = entries.get(os.path.abspath(path))
        if entry is None:
            return path, False, "not in the compile commands\n", False
        key = key_of(entry, common, root, deps, digests)
        record = os.path.join(o.cache, key) if key else None
        if record and os.path.exists(record):
            return path, True, "", True
        r = subprocess.run(tidy + [path], capture_output=True, text=True)
        text = "".join(line for line in (r.stdout + r.stderr).splitlines(True) if not any(n in line for n in NOISE))
        if r.returncode == 0 and record:
            open(record, "w").close()
        return path, r.returncode == 0, text, False

    failed = remembered = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=o.jobs) as pool:
        for path, ok, text, cached in pool.map(run, o.files):
            remembered += cached
            if text.strip():
                sys.stderr.write(text)
            if not ok:
                failed += 1
                sys.stderr.write(f"clang-tidy: findings in {path}\n")
    print(f"   {len(o.files)} sources, {remembered} clean in an earlier run, {failed} with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
