#!/usr/bin/env python3
"""Validates the ARM traffic the end-to-end tests captured (tests/e2e/capture.py) with oav against the
published OpenAPI documents of every api-version hcprp serves.

1. `npm ci` installs the pinned oav (package.json + package-lock.json here) into --work, again only when
   the lock file changed.
2. Each capture is matched to its api-version by the request's `api-version` parameter. Requests under
   /providers/Microsoft.RedHatOpenShift with one of the five api-versions are validated against that
   version's openapi.json; everything else (subscription lifecycle calls with api-version 2.0, /healthz,
   routes without an api-version) is not described by the documents and is only counted.
   Captures are copied unchanged into one folder per api-version, the form oav reads.
3. oav's traffic validator (validate-traffic.cjs) checks each request and response.

Fails (exit 1), printing every finding grouped by kind with the captures it came from, when:
  - a response does not match the document;
  - a request does not match the document and the service still accepted it (status below 400);
  - a request matches no operation of its document, except the operation status and result routes
    (hcpOperationStatuses, hcpOperationResults), which ARM's RPC defines and the documents do not;
  - oav fails on a pair, or there is nothing to validate.
Request findings on requests the service refused (status 400 and above) are the tests' deliberate
invalid input and are listed, not failed.

Usage: oav.py --traffic DIR --spec-root DIR [--work DIR]
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
VERSIONS = {
    "2024-06-10-preview": "preview/2024-06-10-preview",
    "2025-12-23-preview": "preview/2025-12-23-preview",
    "2026-06-30-preview": "preview/2026-06-30-preview",
    "2026-09-01-preview": "preview/2026-09-01-preview",
    "2026-10-01": "stable/2026-10-01",
}
STATUS_ROUTES = ("/hcpoperationstatuses/", "/hcpoperationresults/")


def npm_ci(work):
    os.makedirs(work, exist_ok=True)
    lock = os.path.join(HERE, "package-lock.json")
    installed = os.path.join(work, "installed-package-lock.json")
    with open(lock, "rb") as f:
        want = f.read()
    if os.path.exists(installed) and os.path.isdir(os.path.join(work, "node_modules", "oav")):
        with open(installed, "rb") as f:
            if f.read() == want:
                return
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(HERE, name), work)
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"npm ci failed ({r.returncode}): {r.stderr.decode(errors='replace')[-3000:]}")
    with open(installed, "wb") as f:
        f.write(want)


def classify(traffic):
    """Returns ({api-version: [capture paths]}, Counter of skipped kinds)."""
    by_version = collections.defaultdict(list)
    skipped = collections.Counter()
    for name in sorted(os.listdir(traffic)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(traffic, name)
        with open(path) as f:
            pair = json.load(f)
        url = urllib.parse.urlsplit(pair["liveRequest"]["url"])
        versions = urllib.parse.parse_qs(url.query).get("api-version", [])
        in_provider = "/providers/microsoft.redhatopenshift" in url.path.lower()
        if len(versions) == 1 and versions[0] in VERSIONS and in_provider:
            by_version[versions[0]].append(path)
        elif versions:
            skipped[f"api-version {','.join(versions)}" + ("" if in_provider else " outside the provider")] += 1
        else:
            skipped[f"no api-version: {url.path if url.path == '/healthz' else 'other paths'}"] += 1
    return by_version, skipped


def validate_version(work, spec_root, version, files):
    staged = os.path.join(work, "staged", version)
    shutil.rmtree(staged, ignore_errors=True)
    os.makedirs(staged)
    for p in files:
        shutil.copy(p, staged)  # unchanged; oav reads a folder
    spec = os.path.join(spec_root, VERSIONS[version], "openapi.json")
    out = os.path.join(work, f"result-{version}.json")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run(["node", os.path.join(HERE, "validate-traffic.cjs"), staged, spec, out], cwd=work,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
    if r.returncode != 0 or not os.path.exists(out):
        sys.exit(f"oav on {version} failed ({r.returncode}): {r.stderr.decode(errors='replace')[-3000:]}")
    with open(out) as f:
        result = json.load(f)
    originals = {os.path.basename(p): p for p in files}
    return result, lambda staged_path: originals.get(os.path.basename(staged_path), staged_path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--traffic", required=True, help="the captures (tests/e2e --traffic-dir)")
    ap.add_argument("--spec-root", required=True,
                    help="api-spec/.../Microsoft.RedHatOpenShift/hcpopenshiftclusters")
    ap.add_argument("--work", default=os.path.join(HERE, "..", "..", "build", "oav"),
                    help="where oav is installed and the captures are staged")
    ap.add_argument("--examples", type=int, default=3, help="captures named per finding")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    if not os.path.isdir(args.traffic):
        sys.exit(f"no captures in {args.traffic}: run the end-to-end tests first")
    npm_ci(work)
    by_version, skipped = classify(args.traffic)

    failing = collections.defaultdict(list)   # kind -> captures
    refused = collections.defaultdict(list)
    undescribed = collections.defaultdict(list)
    total = 0
    for version in sorted(by_version):
        files = by_version[version]
        total += len(files)
        result, original = validate_version(work, os.path.abspath(args.spec_root), version, files)
        for item in result["results"]:
            capture = original(item.get("payloadFilePath") or "")
            op = (item.get("operationInfo") or {}).get("operationId", "?")
            status = 0
            try:
                with open(capture) as f:
                    status = int(json.load(f)["liveResponse"]["statusCode"])
            except (OSError, ValueError, KeyError):
                pass
            for e in item.get("errors") or []:
                # One kind per place in the document, whatever the list index.
                where = ",".join(sorted({re.sub(r"\[\d+\]", "[*]", p) for p in e.get("jsonPathsInPayload") or []}))
                kind = (version, op, e.get("issueSource"), e.get("code"), e.get("message"), where)
                if e.get("issueSource") == "request" and status >= 400:
                    refused[kind].append(capture)
                else:
                    failing[kind].append(capture)
            for e in item.get("runtimeExceptions") or []:
                failing[(version, op, "oav", e.get("code"), e.get("message"), "")].append(capture)
        for staged in result["undefined"]:
            capture = original(staged)
            with open(capture) as f:
                req = json.load(f)["liveRequest"]
            path = urllib.parse.urlsplit(req["url"]).path
            route = "/" + "/".join("{}" if i % 2 and s.lower() != "microsoft.redhatopenshift" else s
                                   for i, s in enumerate(path.split("/")[1:]))
            kind = (version, req["method"], route)
            if any(s in path.lower() for s in STATUS_ROUTES):
                undescribed[kind].append(capture)
            else:
                failing[(version, "?", "request", "UNDEFINED_OPERATION",
                         f"{req['method']} {route} matches no operation of the document", "")].append(capture)

    def show(title, groups):
        n = sum(len(v) for v in groups.values())
        print(f"\n== {title}: {n} in {len(groups)} kinds")
        for kind, caps in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  [{len(caps)}x] " + " | ".join(str(k) for k in kind if k))
            for c in caps[:args.examples]:
                print(f"        {c}")

    print(f"oav: {total} captures validated ("
          + ", ".join(f"{v}: {len(f)}" for v, f in sorted(by_version.items())) + ")")
    print("not in the documents, not validated: "
          + (", ".join(f"{k}: {n}" for k, n in sorted(skipped.items())) or "none"))
    show("operation status/result routes (ARM RPC, not in the documents)", undescribed)
    show("request findings on requests the service refused (deliberate invalid input)", refused)
    show("FINDINGS", failing)
    if total == 0:
        print("nothing to validate: no ARM traffic was captured")
        return 1
    bad = sum(len(v) for v in failing.values())
    checked = total - sum(len(v) for v in undescribed.values())
    with_findings = len({c for v in failing.values() for c in v})
    print(f"\noav: {checked} captures checked against their operation, {checked - with_findings} valid; "
          f"{bad} findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
