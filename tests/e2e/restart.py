#!/usr/bin/env python3
"""The parts as separate processes (clusters-service, frontend, backend on one SQLite store): a backend
killed with SIGKILL in the middle of an operation is replaced, and the operation still finishes."""

import json
import signal
import socket
import time

from e2e import (Arm, CsClient, expect, expect_eq, run_tests, wait_until)


def start_parts(ctx):
    cs_url, _ = ctx.clusters_service(profile="demo", time_scale="1")
    store = "sqlite://" + ctx.path("hcprp.db")
    ctx.db = ctx.path("hcprp.db")
    endpoint, _ = ctx.frontend(store, cs_url)
    backend = ctx.backend(store, cs_url, ["--lease-ttl-ms", "2000"])
    return cs_url, store, endpoint, backend


def test_backend_killed_mid_operation(ctx):
    cs_url, store, endpoint, backend = start_parts(ctx)
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path("r1"), arm.cluster_body("r1"))
    expect_eq(r.status, 201, f"create ({r!r})")
    status_url = r.header("Azure-AsyncOperation")

    wait_until(lambda: arm.call("GET", status_url).body["status"] == "Provisioning", timeout=30, interval=0.05,
               what="the operation to reach Provisioning")
    backend.kill(signal.SIGKILL)
    backend.p.wait(timeout=10)
    expect_eq(backend.p.returncode, -signal.SIGKILL, "backend exit")

    # Without a backend nothing moves the operation on, even when the Cluster Service is done.
    def cs_ready():
        items = cs.clusters(arm.subscription)["items"]
        return items and items[0]["status"]["state"] == "ready"
    wait_until(cs_ready, timeout=30, what="the Cluster Service cluster to be ready")
    stalled = arm.call("GET", status_url).body["status"]
    expect_eq(stalled, "Provisioning", "operation status while no backend runs")

    started = time.monotonic()
    ctx.backend(store, cs_url, ["--lease-ttl-ms", "2000"])
    seen, final = arm.poll_operation(status_url, timeout=60, interval=0.1)
    took = time.monotonic() - started
    expect_eq(seen[-1], "Succeeded", f"operation after the restart ({final})")
    print(f"operation finished {took:.1f}s after the new backend started")
    g = arm.call("GET", arm.cluster_path("r1"))
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "cluster state")

    # The new backend drives new work too: a node pool, then the cluster's delete.
    r = arm.call("PUT", arm.nodepool_path("r1", "np1"), arm.nodepool_body("r1"))
    expect_eq(r.status, 201, f"node pool create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "node pool create")
    ctx.check(store, cs_url)


def test_backend_killed_mid_delete(ctx):
    cs_url, store, endpoint, backend = start_parts(ctx)
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path("r2"), arm.cluster_body("r2"))
    expect_eq(r.status, 201, f"create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "create")
    d = arm.call("DELETE", arm.cluster_path("r2"))
    expect_eq(d.status, 202, f"delete ({d!r})")
    status_url = d.header("Azure-AsyncOperation")
    wait_until(lambda: arm.call("GET", status_url).body["status"] == "Deleting", timeout=30, interval=0.05,
               what="the delete to reach Deleting")
    backend.kill(signal.SIGKILL)
    backend.p.wait(timeout=10)
    time.sleep(1)
    ctx.backend(store, cs_url, ["--lease-ttl-ms", "2000"])
    seen, final = arm.poll_operation(status_url, timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", f"delete after the restart ({final})")
    expect_eq(arm.call("GET", arm.cluster_path("r2")).status, 404, "cluster GET after the delete")
    expect_eq(CsClient(cs_url).clusters(arm.subscription)["total"], 0, "Cluster Service clusters")
    ctx.check(store, cs_url)


def test_notification_outlives_the_backend(ctx):
    """The operation ends while ARM's notification endpoint is down; the backend dies before it could
    deliver. The next backend delivers it (the owed notification is in the store)."""
    cs_url, store, endpoint, backend = start_parts(ctx)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    arm = Arm(endpoint)
    arm.register()
    uri = f"http://127.0.0.1:{port}/arm-callback"
    r = arm.call("PUT", arm.cluster_path("n1"), arm.cluster_body("n1"),
                 headers={"Azure-AsyncNotificationUri": uri})
    expect_eq(r.status, 201, f"create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "create")
    backend.kill(signal.SIGKILL)  # its first attempts were refused: nobody listens yet
    backend.p.wait(timeout=10)
    listener = ctx.listener(port)
    ctx.backend(store, cs_url, ["--lease-ttl-ms", "2000"])
    got = listener.wait(lambda item: item["path"] == "/arm-callback", timeout=30)
    expect_eq(json.loads(got["raw"]).get("status"), "Succeeded", "notified status")
    ctx.check(store, cs_url)


if __name__ == "__main__":
    run_tests([test_backend_killed_mid_operation, test_backend_killed_mid_delete,
               test_notification_outlives_the_backend])
