#!/usr/bin/env python3
"""Nothing missed after a restart: with the periodic resync pushed out of reach (--resync-seconds 600),
what the Cluster Service did while a process was down reaches ARM within a second of that process's start.
- a backend killed with kill -9 in the middle of a create, restarted under its name after the Cluster
  Service finished the cluster: it takes its shards back at once and the operation ends Succeeded;
- an idle cluster upgraded behind the backend's back (a PATCH straight to the Cluster Service) while the
  backend is down: the restarted backend applies the events it missed (its place in the stream is kept in
  the store) and ARM shows the new activeVersions;
- the same with the Cluster Service restarted too (its event history no longer reaches back): the
  backend lists the Cluster Service at once instead of waiting for a resync;
- `hcprp serve` killed and restarted on its data dir: it serves new operations at once (it keeps its
  backend name there and takes its shards back without waiting for their leases to lapse)."""

import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import e2e  # noqa: E402
from e2e import Arm, CsClient, expect, expect_eq, run_tests, url_after, wait_until  # noqa: E402

RESYNC = ["--resync-seconds", "600"]
BACKEND = ["--owner", "restart-events-backend", "--lease-ttl-ms", "3000", *RESYNC]
WITHIN = 1.0  # seconds after the process's start


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clusters_service(ctx, argv=None):
    """The simulator on a fixed port (a restart keeps its URL); returns (URL, process)."""
    argv = argv or [e2e.ARGS.hcprp, "clusters-service", "--listen", f"127.0.0.1:{free_port()}",
                    "--data-dir", ctx.path("cs"), "--profile", "demo", "--time-scale", "1",
                    "--tls-dir", ctx.tls.dir]
    p = ctx.spawn("clusters-service", argv)
    url = p.wait_line(url_after("listening on"))
    control = p.wait_line(url_after("simulator control:"))
    e2e.CONTROL[url.rstrip("/")] = control[:-len("/control")]
    ctx.cs_url = url
    return url, p


def start_parts(ctx):
    cs_url, cs_proc = clusters_service(ctx)
    store = "sqlite://" + ctx.path("hcprp.db")
    ctx.db = ctx.path("hcprp.db")
    endpoint, _ = ctx.frontend(store, cs_url)
    backend = ctx.backend(store, cs_url, BACKEND)
    return cs_url, cs_proc, store, endpoint, backend


def kill(proc):
    proc.kill(signal.SIGKILL)
    proc.p.wait(timeout=10)


def cs_cluster(cs, arm):
    return cs.clusters(arm.subscription)["items"][0]


def active(arm, path):
    r = arm.call("GET", path)
    expect_eq(r.status, 200, f"GET {path} ({r!r})")
    return [v["version"] for v in r.body["properties"].get("status", {}).get("activeVersions", [])]


def create_ready(arm, name):
    r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name))
    expect_eq(r.status, 201, f"create {name} ({r!r})")
    seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=90, interval=0.1)
    expect_eq(seen[-1], "Succeeded", f"create of {name} ({final})")


def seconds_until(fn, timeout):
    start = time.monotonic()
    wait_until(fn, timeout=timeout, interval=0.02, what="the change to reach ARM")
    return time.monotonic() - start


def test_operation_in_flight(ctx):
    cs_url, _, store, endpoint, backend = start_parts(ctx)
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path("inflight"), arm.cluster_body("inflight"))
    expect_eq(r.status, 201, f"create ({r!r})")
    status_url = r.header("Azure-AsyncOperation")
    wait_until(lambda: arm.call("GET", status_url).body["status"] == "Provisioning", timeout=30, interval=0.05,
               what="the operation to reach Provisioning")
    kill(backend)
    wait_until(lambda: cs_cluster(cs, arm)["status"]["state"] == "ready", timeout=60,
               what="the Cluster Service cluster to be ready")
    expect_eq(arm.call("GET", status_url).body["status"], "Provisioning", "operation while no backend runs")
    ctx.backend(store, cs_url, BACKEND)
    took = seconds_until(lambda: arm.call("GET", status_url).body["status"] == "Succeeded", 30)
    print(f"operation in flight Succeeded {took:.2f}s after the backend started")
    expect(took < WITHIN, f"the operation ended {took:.2f}s after the restart")


def upgrade_behind_backend(ctx, restart_cs):
    cs_url, cs_proc, store, endpoint, backend = start_parts(ctx)
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    create_ready(arm, "idle")
    path = arm.cluster_path("idle")
    expect_eq(active(arm, path), ["4.20.14"], "the z-stream a cluster created at 4.20 runs")
    kill(backend)
    href = cs_cluster(cs, arm)["href"]
    r = cs.call("PATCH", href, {"version": {"id": "openshift-v4.20.15"}})
    expect_eq(r.status, 200, f"PATCH straight to the Cluster Service ({r!r})")

    def upgraded():
        history = cs_cluster(cs, arm)["status"].get("version_history", [])
        return history and history[0].get("version") == "4.20.15" and history[0].get("state") == "Completed"
    wait_until(upgraded, timeout=60, what="the upgrade to complete in the Cluster Service")
    if restart_cs:
        kill(cs_proc)
        clusters_service(ctx, cs_proc.argv)
    expect_eq(active(arm, path), ["4.20.14"], "activeVersions while no backend runs")
    ctx.backend(store, cs_url, BACKEND)
    took = seconds_until(lambda: active(arm, path) == ["4.20.15"], 30)
    print(f"idle cluster's upgrade visible {took:.2f}s after the backend started"
          + (" (Cluster Service restarted)" if restart_cs else ""))
    expect(took < WITHIN, f"the upgrade reached ARM {took:.2f}s after the restart")


def test_idle_change_while_backend_down(ctx):
    upgrade_behind_backend(ctx, restart_cs=False)


def test_idle_change_with_cluster_service_restarted(ctx):
    upgrade_behind_backend(ctx, restart_cs=True)


def test_serve_restart(ctx):
    endpoint, _, serve = ctx.serve(profile="instant", extra=RESYNC)
    arm = Arm(endpoint)
    arm.register()
    create_ready(arm, "before")
    kill(serve)
    start = time.monotonic()
    endpoint, _, _ = ctx.serve(profile="instant", extra=RESYNC)
    arm.endpoint = endpoint
    r = arm.call("PUT", arm.cluster_path("after"), arm.cluster_body("after"))
    expect_eq(r.status, 201, f"create after the restart ({r!r})")
    status_url = r.header("Azure-AsyncOperation")
    took = seconds_until(lambda: arm.call("GET", status_url).body["status"] == "Succeeded", 30)
    print(f"first create after the restart Succeeded {took:.2f}s after the ARM endpoint came up "
          f"({time.monotonic() - start:.2f}s after the start)")
    expect(took < WITHIN, f"the first create took {took:.2f}s")


if __name__ == "__main__":
    run_tests([test_operation_in_flight, test_idle_change_while_backend_down,
               test_idle_change_with_cluster_service_restarted, test_serve_restart])
