#!/usr/bin/env python3
"""The unmodified Azure SDK for Python (Debian's python3-azure, run by /usr/bin/python3, which sees
Debian's packages) drives tests/sdk/lifecycle.py against `hcprp serve`: a cluster, a node pool and an
external auth through create, update and delete with the generic *_by_id operations and ARMPolling, and
the credential requests."""

import json
import os
import subprocess

from e2e import credential_request_body, expect, expect_eq, run_tests

CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "lifecycle.py")
PYTHON = os.environ.get("HCPRP_SDK_PYTHON", "/usr/bin/python3")


def test_sdk_python_lifecycle(ctx):
    r = subprocess.run([PYTHON, "-c", "import azure.mgmt.resource, azure.mgmt.core"], capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    expect_eq(r.returncode, 0, f"{PYTHON} cannot import the Azure SDK (apt-get install python3-azure): "
                               f"{r.stderr.decode()[-1000:]}")
    endpoint, _, _ = ctx.serve(profile="demo", time_scale="0.3")
    env = dict(os.environ, HCPRP_TLS_CA=ctx.tls.ca, HCPRP_TLS_CERT=ctx.tls.client_cert,
               HCPRP_TLS_KEY=ctx.tls.client_key, NODE_EXTRA_CA_CERTS=ctx.tls.ca, HCPRP_API_VERSION="2026-10-01",
               HCPRP_CREDENTIAL_REQUEST=json.dumps(credential_request_body("2026-10-01")))
    r = subprocess.run([PYTHON, CLIENT, endpoint], capture_output=True, timeout=300, env=env,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    expect_eq(r.returncode, 0, f"lifecycle.py: {out[-2000:]} {r.stderr.decode('utf-8', 'replace')[-4000:]}")
    expect("1 passed, 0 failed" in out, f"lifecycle.py output: {out!r}")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_sdk_python_lifecycle])
