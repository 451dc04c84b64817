#!/usr/bin/env python3
"""Every read route at every api-version hcprp serves: a cluster, a node pool and an external auth
created at the stable version are read, singly and in lists, at each of the five api-versions, with the
provider's operations, hcpOpenShiftVersions and hcpOperatorIdentityRoleSets. The statuses are checked
here; the bodies are judged by e2e_oav, which validates each captured response against the document of
its api-version."""

import json
import os

from e2e import API_VERSION, PROVIDER, Arm, expect, expect_eq, run_tests

API_VERSIONS = ("2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview",
                "2026-10-01")
BODIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "bodies.json")


def external_auth_body(arm):
    with open(BODIES) as f:
        text = f.read().replace("{subscriptionId}", arm.subscription).replace("{resourceGroup}", arm.resource_group)
    return json.loads(text)["externalAuth"]


def create(arm, path, body):
    r = arm.call("PUT", path, body)
    expect_eq(r.status, 201, f"PUT {path} ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=90)
    expect_eq(seen[-1], "Succeeded", f"PUT {path}: statuses {seen}")


def test_reads_at_every_api_version(ctx):
    endpoint, _, _ = ctx.serve(profile="instant")
    arm = Arm(endpoint)
    arm.register()
    cluster = arm.cluster_path("v1")
    create(arm, cluster, arm.cluster_body("v1"))
    create(arm, arm.nodepool_path("v1", "np1"), arm.nodepool_body("v1"))
    create(arm, f"{cluster}/externalAuths/ea1", external_auth_body(arm))

    sub = f"/subscriptions/{arm.subscription}"
    location = f"{sub}{PROVIDER}/locations/eastus"
    failures = []
    for v in API_VERSIONS:
        reads = [f"{PROVIDER}/operations", f"{location}/hcpOpenShiftVersions",
                 f"{location}/hcpOperatorIdentityRoleSets", f"{sub}{PROVIDER}/hcpOpenShiftClusters",
                 f"{arm.rg_path()}{PROVIDER}/hcpOpenShiftClusters", cluster, f"{cluster}/nodePools",
                 arm.nodepool_path("v1", "np1"), f"{cluster}/externalAuths", f"{cluster}/externalAuths/ea1"]
        for path in reads:
            r = arm.call("GET", path, api_version=v)
            if r.status != 200:
                failures.append(f"GET {path} at {v}: HTTP {r.status} {r.raw[:300]}")
                continue
            if path.endswith("/hcpOpenShiftVersions"):
                items = r.body.get("value") or []
                expect(items, f"no hcpOpenShiftVersions at {v}")
                one = arm.call("GET", f"{path}/{items[0]['name']}", api_version=v)
                if one.status != 200:
                    failures.append(f"GET {path}/{items[0]['name']} at {v}: HTTP {one.status} {one.raw[:300]}")
    expect(not failures, "reads that failed:\n  " + "\n  ".join(failures))
    # Still the stable version's view after all the reads.
    g = arm.call("GET", cluster, api_version=API_VERSION)
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "cluster state")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_reads_at_every_api_version])
