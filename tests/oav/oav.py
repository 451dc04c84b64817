#!/usr/bin/env python3
"""Validates the ARM traffic the end-to-end tests captured (tests/e2e/capture.py) with oav against the
published OpenAPI documents of every api-version hcprp serves.

1. `npm ci` installs the pinned oav (package.json + package-lock.json here) into --work, again only when
   the lock file changed.
2. Each capture is matched to its api-version by the request's `api-version` parameter. Requests under
   /providers/Microsoft.RedHatOpenShift with one of the five api-versions are validated against that
   version's openapi.json. The operation status route (hcpOperationStatuses), which ARM's RPC defines
   and the documents do not, is validated against a small document written here for it
   (OperationStatusResult and ErrorResponse of the common-types the documents use). Everything else
   (the operation result route, whose body is the operation's; subscription lifecycle calls with
   api-version 2.0; /healthz) is not described by any document and is only counted.
   Captures are copied unchanged into one folder per api-version and document, the form oav reads.
3. oav's traffic validator (validate-traffic.cjs) checks each request and response.

Fails (exit 1), printing every finding grouped by kind with the captures it came from, when:
  - a response does not match the document;
  - a request does not match the document and the service still accepted it (status below 400);
  - a request matches no operation of its document and the service still accepted it;
  - oav fails on a pair, or there is nothing to validate.
Request findings (a request that does not match, or matches no operation) on requests the service
refused (status 400 and above) are the tests' deliberate invalid input and are listed, not failed. So
are request findings in the captures of tests/upstream (file names `upstream-*`): their bodies are the
real service's own test data, which omit `location` and send read-only `name` and `type`, and the real
service accepts them; what hcprp answers to them is validated like every other response. And so are the
response findings of the documents' own inconsistency (SPEC_INCONSISTENCY below): the operator identities
a cluster created without them, as the real service allows, cannot have.

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
STATUS_ROUTE = "/hcpoperationstatuses/"
RESULT_ROUTE = "/hcpoperationresults/"


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


def status_document(work, spec_root, version):
    """Writes the document of the operation status route at `version`; returns its path."""
    # oav ties a capture to the documents whose path names the provider and the api-version.
    d = os.path.join(work, "rpc", "Microsoft.RedHatOpenShift", version)
    os.makedirs(d, exist_ok=True)
    types = os.path.join(spec_root, "..", "..", "..", "..", "common-types", "resource-management", "v6",
                         "types.json")
    types = os.path.relpath(os.path.abspath(types), d)

    def path_param(name):
        return {"name": name, "in": "path", "required": True, "type": "string"}
    doc = {
        "swagger": "2.0",
        "info": {"title": "ARM asynchronous operation status of Microsoft.RedHatOpenShift", "version": version},
        "host": "management.azure.com",
        "schemes": ["https"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "paths": {
            "/subscriptions/{subscriptionId}/providers/Microsoft.RedHatOpenShift/locations/{location}/"
            "hcpOperationStatuses/{operationId}": {
                "get": {
                    "operationId": "HcpOperationStatuses_Get",
                    "parameters": [path_param("subscriptionId"), path_param("location"),
                                   path_param("operationId"),
                                   {"name": "api-version", "in": "query", "required": True, "type": "string"}],
                    "responses": {
                        "200": {"description": "The operation's status.",
                                "schema": {"$ref": f"{types}#/definitions/OperationStatusResult"}},
                        "default": {"description": "An ARM error.",
                                    "schema": {"$ref": f"{types}#/definitions/ErrorResponse"}},
                    },
                }
            }
        },
    }
    path = os.path.join(d, "operation-status.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def classify(traffic):
    """Returns ({(api-version, "resources" or "status"): [capture paths]}, Counter of skipped kinds)."""
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
        lower = url.path.lower()
        in_provider = "/providers/microsoft.redhatopenshift" in lower
        if len(versions) == 1 and versions[0] in VERSIONS and in_provider:
            if RESULT_ROUTE in lower:
                skipped["operation result route (the body is the operation's)"] += 1
            else:
                by_version[(versions[0], "status" if STATUS_ROUTE in lower else "resources")].append(path)
        elif versions:
            skipped[f"api-version {','.join(versions)}" + ("" if in_provider else " outside the provider")] += 1
        else:
            skipped[f"no api-version: {url.path if url.path == '/healthz' else 'other paths'}"] += 1
    return by_version, skipped


def validate_version(work, spec_root, version, routes, files):
    staged = os.path.join(work, "staged", version, routes)
    shutil.rmtree(staged, ignore_errors=True)
    os.makedirs(staged)
    for p in files:
        shutil.copy(p, staged)  # unchanged; oav reads a folder
    if routes == "status":
        spec = status_document(work, spec_root, version)
    else:
        spec = os.path.join(spec_root, VERSIONS[version], "openapi.json")
    out = os.path.join(work, f"result-{version}-{routes}.json")
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


# The specification's own inconsistency (docs/validation.md, "The specification's own inconsistencies"):
# a cluster created without operator identities, as the real service allows, cannot have these properties,
# which the documents mark required in a response. Findings of exactly these are listed apart.
SPEC_INCONSISTENCY = re.compile(r"(^|\.)properties\.platform\.operatorsAuthentication"
                                r"(\.userAssignedIdentities\.(controlPlaneOperators|dataPlaneOperators|"
                                r"serviceManagedIdentity))?$")


def spec_inconsistency(error):
    """Whether an oav finding is one of the documents' own inconsistency above."""
    paths = error.get("jsonPathsInPayload") or []
    return (error.get("issueSource") == "response" and error.get("code") == "OBJECT_MISSING_REQUIRED_PROPERTY"
            and bool(paths) and all(SPEC_INCONSISTENCY.search(p) for p in paths))


def client_data(capture):
    """Whether a capture's request is the real service's own test data (tests/upstream)."""
    return os.path.basename(capture).startswith("upstream-")


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
    inconsistent = collections.defaultdict(list)  # SPEC_INCONSISTENCY
    total = 0
    for version, routes in sorted(by_version):
        files = by_version[(version, routes)]
        total += len(files)
        result, original = validate_version(work, os.path.abspath(args.spec_root), version, routes, files)
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
                if e.get("issueSource") == "request" and (status >= 400 or client_data(capture)):
                    refused[kind].append(capture)
                elif spec_inconsistency(e):
                    inconsistent[kind].append(capture)
                else:
                    failing[kind].append(capture)
            for e in item.get("runtimeExceptions") or []:
                # oav stops at a runtime error: the captures after this one were not validated.
                failing[(version, op, "oav", e.get("code"), f"{e.get('message')} (oav stopped here)",
                         "")].append(capture)
        for staged in result["undefined"]:
            capture = original(staged)
            with open(capture) as f:
                pair = json.load(f)
            req = pair["liveRequest"]
            path = urllib.parse.urlsplit(req["url"]).path
            route = "/" + "/".join("{}" if i % 2 and s.lower() != "microsoft.redhatopenshift" else s
                                   for i, s in enumerate(path.split("/")[1:]))
            kind = (version, "?", "request", "UNDEFINED_OPERATION",
                    f"{req['method']} {route} matches no operation of the document", "")
            refused_it = int(pair["liveResponse"]["statusCode"]) >= 400
            (refused if refused_it else failing)[kind].append(capture)

    def show(title, groups):
        n = sum(len(v) for v in groups.values())
        print(f"\n== {title}: {n} in {len(groups)} kinds")
        for kind, caps in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  [{len(caps)}x] " + " | ".join(str(k) for k in kind if k))
            for c in caps[:args.examples]:
                print(f"        {c}")

    print(f"oav: {total} captures validated ("
          + ", ".join(f"{v} {r}: {len(f)}" for (v, r), f in sorted(by_version.items())) + ")")
    print("not in any document, not validated: "
          + (", ".join(f"{k}: {n}" for k, n in sorted(skipped.items())) or "none"))
    show("request findings on requests the service refused (deliberate invalid input) or in the real "
         "service's test data", refused)
    show("response findings of the documents' own inconsistency (docs/validation.md)", inconsistent)
    show("FINDINGS", failing)
    if total == 0:
        print("nothing to validate: no ARM traffic was captured")
        return 1
    bad = sum(len(v) for v in failing.values())
    with_findings = len({c for v in failing.values() for c in v})
    print(f"\noav: {total} captures checked, {total - with_findings} valid; {bad} findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
