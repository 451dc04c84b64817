#!/usr/bin/env python3
"""Crash points: for each named point of the provisioning engine and the simulated Azure, `hcprp serve`
is started with HCPRP_CRASH_AT=<point> and driven through a cluster's life (create with a node pool,
scale up, scale down, delete the node pool, delete the cluster); the process kills itself at the point,
is restarted without it on the same data dir, and the scenario goes on. Asserted at the end of each:
the point was reached, every operation ended Succeeded, no Azure resource was created twice, and
nothing the service created is left in the simulated Azure. -k NAME runs the points containing NAME."""

import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import e2e  # noqa: E402
from e2e import TERMINAL, Arm, CsClient, TestFailure, expect, expect_eq, run_tests, url_after  # noqa: E402

SCALE = "0.05"
SUBSCRIPTION = "00000000-0000-4000-8000-00000000c9a1"
RG = "points-rg"

# (point, which time it is reached). Each is reached by the scenario below; the crash comes after the
# step at that point is committed (engine and Azure together) or, for azure.*, before.
POINTS = [
    ("azure.create.resourceGroup", 1),
    ("controlplane.create.loadBalancer", 1),
    ("transition.cluster.installing", 1),
    ("transition.cluster.ready", 1),
    ("azure.create.virtualMachine", 1),
    ("machine.create.virtualMachine", 2),
    ("transition.nodepool.ready", 1),
    ("scale.up", 1),
    ("transition.nodepool.updating", 1),
    ("scale.down", 1),
    ("azure.delete.virtualMachine", 1),
    ("machine.delete.disk", 1),
    ("transition.nodepool.deleted", 1),
    ("controlplane.delete.roleAssignment", 1),
    ("azure.delete.resourceGroup", 1),
    ("controlplane.delete.resourceGroup", 1),
    ("transition.cluster.deleted", 1),
]


class Serve:
    """hcprp serve on one data dir, restarted on demand; the first start may arm a crash point."""

    def __init__(self, ctx, point):
        self.ctx = ctx
        self.data = ctx.path("serve")
        self.start(point)

    def start(self, point=None):
        env = dict(os.environ)
        env.pop("HCPRP_CRASH_AT", None)
        if point:
            env["HCPRP_CRASH_AT"] = point
        self.proc = self.ctx.spawn("serve", [e2e.ARGS.hcprp, "serve", "--data-dir", self.data, "--listen",
                                             "127.0.0.1:0", "--retry-after", "1", "--profile", "demo",
                                             "--time-scale", SCALE, "--provisioner", "engine",
                                             "--tls-dir", self.ctx.tls.dir],
                                   env=env)
        self.endpoint = self.proc.wait_line(url_after("ARM endpoint:"))
        self.cs = CsClient(self.proc.wait_line(url_after("Cluster Service:")))
        control = self.proc.wait_line(url_after("simulator control:"))
        e2e.CONTROL[self.cs.base] = control[:-len("/control")]
        self.ctx.db = os.path.join(self.data, "hcprp.db")
        self.ctx.cs_url = self.cs.base

    def crashed(self):
        return self.proc.p.poll() is not None


def run_point(ctx, point, nth):
    srv = Serve(ctx, f"{point}@{nth}")
    arm = Arm(srv.endpoint, subscription=SUBSCRIPTION, resource_group=RG)
    arm.register()
    state = {"crashes": 0, "max_attempts": {}}

    def call(method, path, body=None):
        """The call, answered by whichever process runs (a crash in between restarts it)."""
        for _ in range(50):
            if srv.crashed():
                restart()
            arm.endpoint = srv.endpoint
            try:
                r = arm.call(method, path, body, timeout=10)
                if r.status < 500:
                    return r
            except Exception:
                pass
            time.sleep(0.2)
        raise TestFailure(f"{method} {path}: no answer")

    def restart():
        expect_eq(srv.proc.p.wait(timeout=10), -9, "exit of the process at the crash point")
        expect("crash point" in srv.proc.log_tail(40), "the crash point's message in the log")
        state["crashes"] += 1
        srv.start()

    def note_attempts():
        try:
            r = srv.cs.call("GET", "/control/azure/resources")
        except OSError:  # the process is at its crash point; the next call restarts it
            return
        if r.status != 200:
            return
        for x in r.body.get("items", []):
            if not x.get("customerOwned", True):
                m = state["max_attempts"]
                m[x["id"]] = max(m.get(x["id"], 0), x.get("createAttempts", 0))

    def run(what, method, path, body=None):
        r = call(method, path, body)
        expect(r.status in (200, 201, 202), f"{what}: {r!r}")
        url = urllib.parse.urlsplit(r.header("Azure-AsyncOperation"))
        deadline = time.monotonic() + 120
        while True:
            g = call("GET", f"{url.path}?{url.query}")
            status = g.body.get("status") if g.status == 200 else None
            note_attempts()
            if status in TERMINAL:
                expect_eq(status, "Succeeded", f"{what} at crash point {point}")
                return
            expect(time.monotonic() < deadline, f"{what}: not terminal after 120 s ({status})")
            time.sleep(0.1)

    run("create cluster", "PUT", arm.cluster_path("p1"), arm.cluster_body("p1"))
    run("create node pool", "PUT", arm.nodepool_path("p1", "np1"), arm.nodepool_body("p1", replicas=2))
    run("scale up", "PUT", arm.nodepool_path("p1", "np1"), arm.nodepool_body("p1", replicas=3))
    run("scale down", "PUT", arm.nodepool_path("p1", "np1"), arm.nodepool_body("p1", replicas=1))
    # A cluster keeps a node pool (its last one cannot be deleted): an empty second pool lets np1 go.
    run("create second node pool", "PUT", arm.nodepool_path("p1", "np2"), arm.nodepool_body("p1", replicas=0))
    run("delete node pool", "DELETE", arm.nodepool_path("p1", "np1"))
    run("delete cluster", "DELETE", arm.cluster_path("p1"))
    if srv.crashed():
        restart()
    expect_eq(state["crashes"], 1, f"crashes at {point}@{nth} (the point was reached once)")
    twice = sorted(i for i, n in state["max_attempts"].items() if n > 1)
    expect_eq(twice, [], "Azure resources whose create was started more than once")
    e2e.wait_until(lambda: srv.cs.clusters(SUBSCRIPTION).get("items", []) == [], 30,
                   what="the Cluster Service to have no cluster left")
    r = srv.cs.call("GET", "/control/azure/resources")
    left = sorted(x["id"] for x in r.body.get("items", []) if not x.get("customerOwned", True))
    expect_eq(left, [], f"Azure resources left after the deletion (crash point {point})")
    expect_eq(ctx.check().get("violations", []), [], "hcprp check violations")


def make_test(point, nth):
    def test(ctx):
        run_point(ctx, point, nth)
    test.__name__ = f"test_crash_at_{point.replace('.', '_')}"
    return test


if __name__ == "__main__":
    run_tests([make_test(p, n) for p, n in POINTS])
