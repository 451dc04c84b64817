#!/usr/bin/env python3
"""kill -9 of the whole `hcprp serve` (the RP, the Cluster Service simulator and its provisioning engine)
at random instants under a mixed load of three client threads (cluster and node pool creates, node pool
scaling, node pool and cluster deletes), restarted on the same data dir each time. After the last round
and a bounded wait: every acknowledged operation is terminal, no delete is stuck, `hcprp check` (with
the simulated Azure) finds nothing, no Azure resource was created twice, and once every cluster is
deleted nothing the service created is left in the simulated Azure.

--seed N and --rounds N choose the run (CI: a fixed seed, 20 rounds); the seed is printed on failure."""

import argparse
import os
import random
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import e2e  # noqa: E402
from e2e import TERMINAL, Arm, CsClient, TestFailure, expect, expect_eq, run_tests  # noqa: E402

_own = argparse.ArgumentParser(add_help=False)
_own.add_argument("--seed", type=int, default=20261123)
_own.add_argument("--rounds", type=int, default=20)
_own.add_argument("--scale", default="0.1", help="--time-scale of hcprp serve (demo profile)")
OWN, _rest = _own.parse_known_args()
sys.argv = [sys.argv[0], *_rest]

SUBSCRIPTION = "00000000-0000-4000-8000-00000000c4a5"
THREADS = 3
SETTLE_TIMEOUT = 240  # seconds for every acknowledged operation to end after the last restart


class Endpoint:
    """The ARM endpoint of the serve process running now (a restart picks a new port)."""

    def __init__(self, url):
        self.lock = threading.Lock()
        self.url = url
        self.up = True

    def set(self, url, up):
        with self.lock:
            self.url, self.up = url, up

    def get(self):
        with self.lock:
            return self.url, self.up


def rebase(url, endpoint):
    """An Azure-AsyncOperation URL moved to the endpoint of the serve process running now."""
    u = urllib.parse.urlsplit(url)
    return f"{endpoint}{u.path}?{u.query}"


class Client(threading.Thread):
    """One client: its own resource group, a random mix of calls, every acknowledged operation recorded."""

    def __init__(self, index, endpoint, seed, stop):
        super().__init__(daemon=True)
        self.index = index
        self.endpoint = endpoint
        self.rng = random.Random(seed * 31 + index)
        self.stop = stop
        self.arm = Arm(endpoint.get()[0], subscription=SUBSCRIPTION, resource_group=f"crash-rg-{index}")
        self.clusters = []  # names whose create was acknowledged and not deleted by us
        self.pools = {}  # cluster name -> pool names
        self.ops = []  # (what, Azure-AsyncOperation URL)
        self.n = 0
        self.errors = 0  # calls that failed at the transport level (the process was down)

    def call(self, method, path, body=None):
        url, up = self.endpoint.get()
        if not up:
            return None
        self.arm.endpoint = url
        try:
            return self.arm.call(method, path, body, timeout=10)
        except Exception:  # connection refused or reset by the kill
            self.errors += 1
            return None

    def acknowledged(self, what, r):
        if r is not None and r.status in (200, 201, 202) and r.header("Azure-AsyncOperation"):
            self.ops.append((what, r.header("Azure-AsyncOperation")))
            return True
        return False

    def step(self):
        self.n += 1
        roll = self.rng.random()
        if roll < 0.25 or not self.clusters:
            name = f"c{self.index}x{self.n}"
            if self.acknowledged(f"create cluster {name}",
                                 self.call("PUT", self.arm.cluster_path(name), self.arm.cluster_body(name))):
                self.clusters.append(name)
                self.pools[name] = []
        elif roll < 0.5:
            c = self.rng.choice(self.clusters)
            name = f"np{self.n}"
            if self.acknowledged(f"create node pool {c}/{name}",
                                 self.call("PUT", self.arm.nodepool_path(c, name),
                                           self.arm.nodepool_body(c, replicas=self.rng.randint(1, 3)))):
                self.pools[c].append(name)
        elif roll < 0.7:
            c = self.rng.choice(self.clusters)
            if self.pools[c]:
                p = self.rng.choice(self.pools[c])
                self.acknowledged(f"scale node pool {c}/{p}",
                                  self.call("PUT", self.arm.nodepool_path(c, p),
                                            self.arm.nodepool_body(c, replicas=self.rng.randint(0, 4))))
        elif roll < 0.85:
            c = self.rng.choice(self.clusters)
            if self.pools[c]:
                p = self.rng.choice(self.pools[c])
                if self.acknowledged(f"delete node pool {c}/{p}", self.call("DELETE", self.arm.nodepool_path(c, p))):
                    self.pools[c].remove(p)
        else:
            c = self.rng.choice(self.clusters)
            if self.acknowledged(f"delete cluster {c}", self.call("DELETE", self.arm.cluster_path(c))):
                self.clusters.remove(c)
                del self.pools[c]

    def run(self):
        while not self.stop.is_set():
            self.step()
            time.sleep(self.rng.uniform(0.05, 0.3))

    def status(self, url):
        """The operation's status now, or None when it cannot be read."""
        endpoint, _ = self.endpoint.get()
        self.arm.endpoint = endpoint
        try:
            r = self.arm.call("GET", rebase(url, endpoint), timeout=10)
        except Exception:
            return None
        return r.body.get("status") if r.status == 200 and isinstance(r.body, dict) else None


def serve(ctx):
    endpoint, cs_url, proc = ctx.serve(profile="demo", time_scale=OWN.scale,
                                       extra=("--provisioner", "engine"))
    return endpoint, CsClient(cs_url), proc


def service_resources(cs):
    """What the service created in the simulated Azure (not the customer's)."""
    r = cs.call("GET", "/control/azure/resources")
    expect_eq(r.status, 200, f"/control/azure/resources ({r!r})")
    return [x for x in r.body.get("items", []) if not x.get("customerOwned", True)]


def wait_terminal(clients, deadline):
    """Polls every acknowledged operation until terminal or the deadline; returns {url: (what, status)}."""
    final = {}
    while True:
        pending = 0
        for c in clients:
            for what, url in c.ops:
                if url in final and final[url][1] in TERMINAL:
                    continue
                final[url] = (what, c.status(url))
                pending += final[url][1] not in TERMINAL
        if pending == 0 or time.monotonic() > deadline:
            return final
        time.sleep(0.5)


def test_random_kills_under_mixed_load(ctx):
    try:
        run_random_kills(ctx)
    except TestFailure as e:
        print(f"random crash test failed with --seed {OWN.seed} --rounds {OWN.rounds}", flush=True)
        raise TestFailure(f"[seed {OWN.seed}] {e}") from e


def run_random_kills(ctx):
    rng = random.Random(OWN.seed)
    print(f"seed {OWN.seed}, {OWN.rounds} rounds, time scale {OWN.scale}", flush=True)
    url, cs, proc = serve(ctx)
    Arm(url, subscription=SUBSCRIPTION).register()
    endpoint = Endpoint(url)
    stop = threading.Event()
    clients = [Client(i, endpoint, OWN.seed, stop) for i in range(THREADS)]
    for c in clients:
        c.start()
    kills = 0
    for _ in range(OWN.rounds):
        time.sleep(rng.uniform(0.3, 3.0))
        endpoint.set(url, False)
        proc.kill()  # SIGKILL
        proc.p.wait(timeout=10)
        kills += 1
        url, cs, proc = serve(ctx)
        endpoint.set(url, True)
    stop.set()
    for c in clients:
        c.join(timeout=30)
    acked = sum(len(c.ops) for c in clients)
    print(f"{kills} kills, {acked} operations acknowledged, "
          f"{sum(c.errors for c in clients)} calls lost to the kills", flush=True)
    expect(acked >= OWN.rounds, f"only {acked} operations acknowledged: the load did not run")

    final = wait_terminal(clients, time.monotonic() + SETTLE_TIMEOUT)
    stuck = sorted(f"{what}: {status}" for what, status in final.values() if status not in TERMINAL)
    stuck_deletes = [s for s in stuck if s.startswith("delete")]
    failed_deletes = sorted(f"{what}: {status}" for what, status in final.values()
                            if what.startswith("delete") and status in TERMINAL and status != "Succeeded")
    print(f"{len(stuck)} operations not terminal ({len(stuck_deletes)} deletes), "
          f"{len(failed_deletes)} deletes not Succeeded", flush=True)
    expect_eq(stuck, [], "operations not terminal after the bounded wait")
    expect_eq(failed_deletes, [], "deletes that did not succeed")

    report = ctx.check()
    expect_eq(report.get("violations", []), [], "hcprp check violations")

    resources = service_resources(cs)
    duplicates = sorted(r["id"] for r in resources if r.get("createAttempts", 0) > 1)
    expect_eq(duplicates, [], "Azure resources whose create was started more than once")
    names = [c["name"] for c in cs.clusters(SUBSCRIPTION).get("items", [])]
    expect_eq(sorted({n for n in names if names.count(n) > 1}), [], "Cluster Service clusters created twice")

    # Everything deleted: nothing the service created may be left. A create whose answer a kill cut off
    # may still have created its cluster: delete what ARM lists, not only what was acknowledged.
    deletes = []
    for c in clients:
        listed = c.call("GET", f"{c.arm.rg_path()}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
        expect(listed is not None and listed.status == 200, f"cluster list of client {c.index}: {listed!r}")
        names = {x["name"] for x in listed.body.get("value", [])} | set(c.clusters)
        for name in sorted(names):
            r = c.call("DELETE", c.arm.cluster_path(name))
            if r is not None and r.status == 202:
                deletes.append((c, r.header("Azure-AsyncOperation")))
    deadline = time.monotonic() + SETTLE_TIMEOUT
    for c, op in deletes:
        while c.status(op) not in TERMINAL:
            expect(time.monotonic() < deadline, f"final delete {op} not terminal after {SETTLE_TIMEOUT}s")
            time.sleep(0.5)
        expect_eq(c.status(op), "Succeeded", f"final delete {op}")
    e2e.wait_until(lambda: cs.clusters(SUBSCRIPTION).get("items", []) == [], 30,
                   what="the Cluster Service to have no cluster left")
    left = sorted(r["id"] for r in service_resources(cs))
    expect_eq(left, [], "Azure resources left after every cluster was deleted")
    print("leaked resources: 0, duplicates: 0, stuck: 0", flush=True)


if __name__ == "__main__":
    run_tests([test_random_kills_under_mixed_load])
