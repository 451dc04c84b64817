#!/usr/bin/env python3
"""Operations that do not simply succeed, against `hcprp serve`: a node pool create superseded by the
cluster's delete, a provisioning error injected in the Cluster Service, an operation status past its TTL."""

import time

from e2e import (Arm, CsClient, CS_PREFIX, expect, expect_eq, run_tests, wait_until)

SUPERSEDED = "This operation was superseded by another"


def test_delete_cluster_while_nodepool_creates(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="0.5")
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path("c1"), arm.cluster_body("c1"))
    expect_eq(r.status, 201, f"cluster create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", "cluster create")

    np_path = arm.nodepool_path("c1", "np1")
    r = arm.call("PUT", np_path, arm.nodepool_body("c1"))
    expect_eq(r.status, 201, f"node pool create ({r!r})")
    np_status_url = r.header("Azure-AsyncOperation")
    expect(np_status_url, "node pool 201 without Azure-AsyncOperation")
    # The node pool is still being created: its Cluster Service object is not ready.
    np_op = arm.call("GET", np_status_url).body
    expect(np_op["status"] in ("Accepted", "Provisioning"), f"node pool operation already {np_op['status']}")

    d = arm.call("DELETE", arm.cluster_path("c1"))
    expect_eq(d.status, 202, f"cluster delete ({d!r})")
    expect(d.header("Location"), "delete 202 without Location")
    expect(d.header("Azure-AsyncOperation"), "delete 202 without Azure-AsyncOperation")
    expect_eq(d.header("Retry-After"), "1", "delete Retry-After")

    # The node pool's create operation ends Canceled, superseded.
    canceled = arm.call("GET", np_status_url)
    expect_eq(canceled.status, 200, f"node pool operation status after the delete ({canceled!r})")
    expect_eq(canceled.body["status"], "Canceled", "node pool create operation status")
    err = canceled.body.get("error") or {}
    expect(err.get("code"), f"Canceled without an error code: {canceled.body}")
    expect(SUPERSEDED in (err.get("message") or ""), f"Canceled error message: {err}")

    # The node pool is being deleted implicitly: its own state says so while it exists.
    npg = arm.call("GET", np_path)
    if npg.status == 200:
        expect_eq(npg.body["properties"]["provisioningState"], "Deleting", "node pool state during the delete")
    else:
        expect_eq(npg.status, 404, f"node pool GET during the delete ({npg!r})")

    seen, final = arm.poll_operation(d.header("Azure-AsyncOperation"), timeout=90)
    expect_eq(seen[-1], "Succeeded", f"cluster delete operation ({final})")
    expect("Deleting" in seen, f"cluster delete never showed Deleting: {seen}")
    expect_eq(arm.call("GET", arm.cluster_path("c1")).status, 404, "cluster GET after the delete")
    expect_eq(arm.call("GET", np_path).status, 404, "node pool GET after the delete")
    # The canceled operation never changes again.
    again = arm.call("GET", np_status_url)
    expect_eq(again.body["status"], "Canceled", "node pool create operation after the delete")
    # The Cluster Service has neither the cluster nor the node pool.
    expect_eq(cs.clusters(arm.subscription)["total"], 0, "Cluster Service clusters after the delete")
    report = ctx.check()
    expect_eq(report["resources"], 0, f"resource documents left: {report}")


def test_provisioning_error(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="0.3")
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    fault = cs.call("POST", "/control/faults/provisioning",
                    {"count": 1, "kinds": ["Cluster"], "code": "OCM3055",
                     "message": "Quota exceeded for the control plane in eastus."})
    expect(fault.status in (200, 201), f"fault injection ({fault!r})")

    r = arm.call("PUT", arm.cluster_path("bad"), arm.cluster_body("bad"))
    expect_eq(r.status, 201, f"create ({r!r})")
    status_url = r.header("Azure-AsyncOperation")
    seen, final = arm.poll_operation(status_url, timeout=60)
    expect_eq(seen[-1], "Failed", f"operation end ({final})")
    err = final.get("error") or {}
    expect_eq(err.get("code"), "OCM3055", f"error code ({final})")
    expect_eq(err.get("message"), "Quota exceeded for the control plane in eastus.", "error message")

    g = arm.call("GET", arm.cluster_path("bad"))
    expect_eq(g.status, 200, "GET of the failed cluster")
    expect_eq(g.body["properties"]["provisioningState"], "Failed", "failed cluster provisioningState")
    res = arm.call("GET", status_url.replace("/hcpOperationStatuses/", "/hcpOperationResults/"))
    expect(res.status >= 400, f"result of a failed operation answered {res.status}")
    expect_eq((res.body or {}).get("error", {}).get("code"), "OCM3055", f"result error ({res!r})")

    # The fault was for one creation only: the next cluster succeeds.
    r = arm.call("PUT", arm.cluster_path("good"), arm.cluster_body("good"))
    expect_eq(r.status, 201, f"second create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", "second create")
    ctx.check()


def test_operation_status_expires(ctx):
    ttl = 6
    endpoint, _, _ = ctx.serve(profile="instant", extra=["--operation-ttl", str(ttl)])
    arm = Arm(endpoint)
    arm.register()
    created_at = time.monotonic()
    r = arm.call("PUT", arm.cluster_path("t1"), arm.cluster_body("t1"))
    expect_eq(r.status, 201, f"create ({r!r})")
    status_url = r.header("Azure-AsyncOperation")
    result_url = status_url.replace("/hcpOperationStatuses/", "/hcpOperationResults/")
    seen, _ = arm.poll_operation(status_url, timeout=ttl - 1)
    expect_eq(seen[-1], "Succeeded", "create")
    expect_eq(arm.call("GET", status_url).status, 200, "status before the TTL")

    def gone():
        return arm.call("GET", status_url).status == 404
    wait_until(gone, timeout=ttl + 15, interval=0.2, what="the operation status to answer 404")
    age = time.monotonic() - created_at
    expect(age >= ttl - 1, f"operation status vanished after {age:.1f}s, before its TTL of {ttl}s")
    expect_eq(arm.call("GET", result_url).status, 404, "result endpoint past the TTL")
    # The resource itself stays.
    g = arm.call("GET", arm.cluster_path("t1"))
    expect_eq(g.status, 200, "cluster GET past the operation's TTL")
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "cluster state")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_delete_cluster_while_nodepool_creates, test_operation_status_expires,
               test_provisioning_error])
