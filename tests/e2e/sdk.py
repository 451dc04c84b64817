#!/usr/bin/env python3
"""The unmodified Azure SDK for JavaScript (tests/sdk/lifecycle.mjs: core-lro pollers over the generic
*ById methods, and over the POST actions) drives a cluster, a node pool and an external auth through
create, update and delete, and the credential requests, against `hcprp serve`, with the bodies of
tests/sdk/bodies.json. npm installs the SDK into a temporary copy of tests/sdk (npm's own cache makes
later runs quick)."""

import json
import os
import shutil
import subprocess

from e2e import credential_request_body, expect, expect_eq, run_tests

SDK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk")


def npm_install(ctx):
    work = ctx.path("sdk")
    os.makedirs(work)
    for f in ("package.json", "lifecycle.mjs", "bodies.json"):
        shutil.copy(os.path.join(SDK_DIR, f), work)
    expect(shutil.which("node") and shutil.which("npm"), "node and npm are needed for the SDK test")
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work,
                       capture_output=True, timeout=400, stdin=subprocess.DEVNULL)
    expect_eq(r.returncode, 0, f"npm install: {r.stderr.decode()[-3000:]}")
    return work


def test_sdk_lifecycle(ctx):
    work = npm_install(ctx)
    endpoint, _, _ = ctx.serve(profile="demo", time_scale="0.3")
    env = dict(os.environ, HCPRP_TLS_CA=ctx.tls.ca, HCPRP_TLS_CERT=ctx.tls.client_cert,
               HCPRP_TLS_KEY=ctx.tls.client_key, NODE_EXTRA_CA_CERTS=ctx.tls.ca, HCPRP_API_VERSION="2026-10-01",
               HCPRP_CREDENTIAL_REQUEST=json.dumps(credential_request_body("2026-10-01")))
    r = subprocess.run(["node", "lifecycle.mjs", endpoint], cwd=work, capture_output=True, timeout=300,
                       env=env, stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    expect_eq(r.returncode, 0, f"node lifecycle.mjs: {out[-2000:]} {r.stderr.decode()[-3000:]}")
    expect("1 passed, 0 failed" in out, f"lifecycle.mjs output: {out!r}")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_sdk_lifecycle])
