#!/usr/bin/env python3
"""Writes available again after a partition heals (target: under 2 s).

The deployment of tests/e2e_partition (PostgreSQL, the Cluster Service simulator, a frontend and a backend,
each in its own network namespace; needs root). A probe sends a write through the frontend every 50 ms,
each in its own thread with a 30 s timeout, and records when it was sent and when it succeeded. Each round
cuts one link for --cut seconds (packets dropped: open connections hang), heals it, and measures from the
heal to the first success of a write sent after the heal:

  frontend-postgres  the frontend cut off from PostgreSQL; the write is a subscription PUT (store only)
  frontend-cs        the frontend cut off from the Cluster Service; the write is a cluster PATCH (tags),
                     which needs the Cluster Service's answer

With --hcprp-before, a second frontend runs that binary (same PostgreSQL, Cluster Service and backend)
and every round measures it right after the first, so both are measured under the same load. Prints
every round and the median and maximum per link, cut length and binary.

Usage (as root): python3 bench/partition/run.py --hcprp build/release/hcprp --hcpctl build/release/hcpctl
                     [--rounds 5] [--cut 8 | --cuts 6,15,30] [--links frontend-postgres,frontend-cs]
                     [--hcprp-before OTHER/hcprp]
"""

import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e_partition"))

_own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
_own.add_argument("--rounds", type=int, default=5)
_own.add_argument("--cut", type=float, default=8.0, help="seconds each link stays cut")
_own.add_argument("--cuts", help="several cut lengths, comma-separated (overrides --cut)")
_own.add_argument("--hcprp-before", help="a baseline hcprp binary, run as a second frontend")
_own.add_argument("--links", default="frontend-postgres,frontend-cs")
OWN, _rest = _own.parse_known_args()
sys.argv = [sys.argv[0], *_rest]

import deployment  # noqa: E402
import netns  # noqa: E402
from deployment import e2e  # noqa: E402
from e2e import Arm, expect_eq, run_tests  # noqa: E402

SUBSCRIPTION = "9a771710-0000-4000-8000-00000000be0c"


class Probe:
    """Sends `write()` every `interval` seconds, each in its own thread; keeps (sent, succeeded) pairs."""

    def __init__(self, write, interval=0.05):
        self.write = write
        self.interval = interval
        self.lock = threading.Lock()
        self.results = []  # (sent, done, ok)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _one(self):
        sent = time.monotonic()
        try:
            ok = self.write()
        except Exception:
            ok = False
        with self.lock:
            self.results.append((sent, time.monotonic(), ok))

    def _run(self):
        while not self.stop.is_set():
            threading.Thread(target=self._one, daemon=True).start()
            self.stop.wait(self.interval)

    def first_success_after(self, t, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                done = [d for s, d, ok in self.results if ok and s >= t]
            if done:
                return min(done) - t
            time.sleep(0.02)
        return None

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)


def measure(net, fnode, peer, probe, cut):
    """Cuts fnode from peer for `cut` seconds, heals; seconds from the heal to the first write sent after
    it that succeeded (None: none within 60 s)."""
    time.sleep(1.0)
    net.cut(fnode, peer)
    time.sleep(cut)
    healed = time.monotonic()
    net.heal(fnode, peer)
    took = probe.first_success_after(healed)
    time.sleep(2.0)  # let the writes of the round end before the next cut
    return took


def bench_partition_heal(ctx):
    cuts = [float(c) for c in OWN.cuts.split(",")] if OWN.cuts else [OWN.cut]
    with netns.Net() as net:
        d = deployment.Deployment(ctx, net, frontends=1, backends=1)
        binaries = {"": d.frontends[0]}
        if OWN.hcprp_before:
            d.hcprp = OWN.hcprp_before
            binaries = {"after": d.frontends[0], "before": d.start_frontend("fe-before")}
        fnode, ep, _ = d.frontends[0]
        arm = Arm(ep, subscription=SUBSCRIPTION)
        arm.register()
        r = arm.call("PUT", arm.cluster_path("probe"), arm.cluster_body("probe"))
        expect_eq(r.status, 201, f"create of the probed cluster ({r!r})")
        arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.2)
        counter = iter(range(10**9))

        def writes(endpoint):
            a = Arm(endpoint, subscription=SUBSCRIPTION)

            def subscription_put():
                return a.register().status in (200, 201)

            def cluster_patch():
                r = a.call("PATCH", a.cluster_path("probe"), {"tags": {"n": str(next(counter))}}, timeout=30)
                return r.status in (200, 202)

            return {"frontend-postgres": (d.pg_node, subscription_put), "frontend-cs": (d.cs_node, cluster_patch)}

        figures = {}
        for link in OWN.links.split(","):
            for cut in cuts:
                for i in range(OWN.rounds):
                    for label, (node, endpoint, _) in binaries.items():
                        peer, write = writes(endpoint)[link]
                        probe = Probe(write)
                        try:
                            took = measure(net, node, peer, probe, cut)
                        finally:
                            probe.close()
                        figures.setdefault((link, cut, label), []).append(took)
                        print(f"{link} cut {cut:g}s {label + ' ' if label else ''}round {i + 1}: writes available "
                              f"again {'never (60 s)' if took is None else f'{took:.2f}s'} after the heal", flush=True)
        for (link, cut, label), xs in figures.items():
            got = [x for x in xs if x is not None]
            if got:
                print(f"{link} cut {cut:g}s{' ' + label if label else ''}: median {statistics.median(got):.2f}s, "
                      f"max {max(got):.2f}s over {len(got)} rounds (target < 2 s)"
                      f"{'' if len(got) == len(xs) else f'; {len(xs) - len(got)} never'}", flush=True)


if __name__ == "__main__":
    netns.skip_unless_root()
    run_tests([bench_partition_heal])
