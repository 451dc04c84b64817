#!/usr/bin/env python3
"""Random partitions under load: PostgreSQL, the Cluster Service simulator, two frontends and two backends
each in their own network namespace; for --seconds, links chosen at random among backend-PostgreSQL,
frontend-PostgreSQL, frontend-Cluster Service and backend-Cluster Service are cut (at most two at once) and
healed, while four clients create and delete clusters through both frontends (two delete a cluster only
once its create has ended, two whenever they like: a delete then races a create whose Cluster Service
request a frontend cut off from it gave up on, docs/partitions.md). Then every link is healed
and the verdict is the kill tests': every acknowledged operation ends (deletes Succeeded), no answer was a
5xx other than 503 with Retry-After, no backend committed a write after its lease was taken over (audit.py),
nothing acknowledged is lost, `hcprp check` is clean, and once everything is deleted nothing is left in the
store, the Cluster Service or the simulated Azure.

--seed N replays a run (the seed is printed first and again on failure); CTest runs a fixed seed.
Exits 77 (skipped) when not root or when the PostgreSQL server binaries are absent.
"""

import argparse
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import audit  # noqa: E402
import deployment  # noqa: E402
import netns  # noqa: E402
from deployment import Load, e2e, pg, shards_held  # noqa: E402
from e2e import Arm, TestFailure, expect, expect_eq, run_tests, wait_until  # noqa: E402

_own = argparse.ArgumentParser(add_help=False)
_own.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
_own.add_argument("--seconds", type=float, default=30.0, help="how long links are cut and healed")
_own.add_argument("--links", default="backend-pg,frontend-pg,frontend-cs,backend-cs",
                  help="the kinds of link cut")
OWN, _rest = _own.parse_known_args()
sys.argv = [sys.argv[0], *_rest]
if OWN.seed is None:
    OWN.seed = random.randrange(1, 2**31)

SUBSCRIPTIONS = [f"9a771710-0000-4000-8000-{i + 100:012d}" for i in range(4)]
MAX_CUTS = 2


def test_random_partitions_under_load(ctx):
    try:
        run_random_partitions(ctx)
    except TestFailure as e:
        print(f"random partition test failed; replay with --seed {OWN.seed} --seconds {OWN.seconds:g} --links {OWN.links}", flush=True)
        raise TestFailure(f"[seed {OWN.seed}] {e}") from e


def run_random_partitions(ctx):
    rng = random.Random(OWN.seed)
    print(f"seed {OWN.seed}, {OWN.seconds:g} s of partitions of {OWN.links}", flush=True)
    with netns.Net() as net:
        d = deployment.Deployment(ctx, net, frontends=2, backends=2)
        be = {o: p for o, (_, p) in d.backends.items()}
        wait_until(lambda: all(len(shards_held(p, o)) == 4 for o, p in be.items()), timeout=20, interval=0.2,
                   what="the backends to hold 4 shards each")
        audit.install(d.pg)
        kinds = set(OWN.links.split(","))
        links = []
        for fnode, _, _ in d.frontends:
            links += [(fnode, peer) for kind, peer in (("frontend-pg", d.pg_node), ("frontend-cs", d.cs_node))
                      if kind in kinds]
        for bnode, _ in d.backends.values():
            links += [(bnode, peer) for kind, peer in (("backend-pg", d.pg_node), ("backend-cs", d.cs_node))
                      if kind in kinds]
        stop = threading.Event()
        loads = []
        for i, sub in enumerate(SUBSCRIPTIONS):
            ep = d.frontends[i % 2][1]
            Arm(ep, subscription=sub).register()
            loads.append(Load(i, ep, sub, OWN.seed, stop, call_timeout=60, settled_deletes=i % 2 == 0))
        for ld in loads:
            ld.start()

        cut, tried = [], []
        end = time.monotonic() + OWN.seconds
        while time.monotonic() < end:
            time.sleep(rng.uniform(0.5, 3.0))
            if cut and (len(cut) >= MAX_CUTS or rng.random() < 0.4):
                a, b = cut.pop(rng.randrange(len(cut)))
                net.heal(a, b)
                print(f"{time.monotonic() - end + OWN.seconds:6.1f}s heal {a.name}-{b.name}", flush=True)
            else:
                a, b = rng.choice([lk for lk in links if lk not in cut])
                net.cut(a, b)
                cut.append((a, b))
                tried.append(f"{a.name}-{b.name}")
                print(f"{time.monotonic() - end + OWN.seconds:6.1f}s cut {a.name}-{b.name}", flush=True)
        net.heal_all()
        healed_at = time.monotonic()
        time.sleep(3)
        stop.set()
        for ld in loads:
            ld.join(timeout=70)
        print(f"{len(tried)} partitions: {', '.join(tried)}", flush=True)
        statuses = {}
        for ld in loads:
            for k, v in ld.statuses.items():
                statuses[k] = statuses.get(k, 0) + v
        print(f"answers: {statuses}; slowest {max(ld.max_latency for ld in loads):.1f}s", flush=True)
        expect_eq([b for ld in loads for b in ld.bad], [], "answers that were 5xx without Retry-After, or hangs")
        expect(tried, "no partition was made")

        wait_until(lambda: all(len(shards_held(p, o)) == 4 for o, p in be.items()), timeout=30, interval=0.2,
                   what="the backends to hold 4 shards each again after the heal")
        print(f"backends balanced again {time.monotonic() - healed_at:.1f}s after the last heal", flush=True)
        writes = audit.read(d.pg)
        for owner, (bnode, _) in d.backends.items():
            taken, late = audit.writes_after_takeover(writes, owner, bnode.ip)
            print(f"fence: {owner} committed {len(audit.fenced_writes(writes, bnode.ip))} writes, "
                  f"{len(taken)} after a takeover, {len(late)} after its leases expired", flush=True)
            if taken:
                print(audit.explain(writes, taken[0]), flush=True)
            expect_eq(taken, [], f"writes {owner} committed after its leases were taken over")
        deployment.verdict(d, loads, settle=90)


if __name__ == "__main__":
    netns.skip_unless_root()
    pg.skip_unless_available()
    run_tests([test_random_partitions_under_load])
