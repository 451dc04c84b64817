#!/usr/bin/env python3
"""Two frontends, two backends and the Cluster Service simulator on one throwaway PostgreSQL server.

The backends split the subscriptions between them (shard leases). With creates, updates and deletes
in flight in several subscriptions, one backend is killed with SIGKILL: the other takes its shards
over within the lease time, every operation still ends as it should, and `hcprp check` finds the
invariants intact. The test prints the failover time: from the kill to the survivor holding every
shard (default settings: 3 s lease, 8 shards).

Exits 77 (skipped) when the PostgreSQL server binaries are absent.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import pg  # noqa: E402
from e2e import (Arm, expect, expect_eq, run_tests, wait_until)  # noqa: E402

SHARDS = 8
SUBSCRIPTIONS = [f"5ab0c0de-0000-4000-8000-{i:012d}" for i in range(6)]


def shards_held(proc, owner):
    """Replays the backend's log (JSON lines on stderr): the shards `owner` holds now."""
    held = set()
    try:
        with open(proc.log_path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return held
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("owner") != owner or "shard" not in rec:
            continue
        msg = rec.get("msg") or rec.get("message") or ""
        if "acquired" in msg:
            held.add(rec["shard"])
        elif "released" in msg or "lapsed" in msg or "lost" in msg:
            held.discard(rec["shard"])
    return held


def start_layout(ctx, pgs):
    cs_url, _ = ctx.clusters_service(profile="demo", time_scale="1")
    store = pgs.url()
    ep1, _ = ctx.frontend(store, cs_url)
    ep2, _ = ctx.frontend(store, cs_url)
    b1 = ctx.backend(store, cs_url, ["--owner", "be-1"])
    b2 = ctx.backend(store, cs_url, ["--owner", "be-2"])
    return cs_url, store, (ep1, ep2), {"be-1": b1, "be-2": b2}


def test_two_frontends_two_backends_kill_one(ctx):
    with pg.PgServer() as pgs:
        cs_url, store, endpoints, backends = start_layout(ctx, pgs)

        # The backends balance: 4 shards each.
        def balanced():
            a, b = shards_held(backends["be-1"], "be-1"), shards_held(backends["be-2"], "be-2")
            return len(a) == SHARDS // 2 and len(b) == SHARDS // 2 and not (a & b)
        wait_until(balanced, timeout=20, interval=0.2, what="the backends to hold 4 shards each")

        # Work in flight in every subscription, through both frontends.
        arms = []
        for i, sub in enumerate(SUBSCRIPTIONS):
            arm = Arm(endpoints[i % 2], subscription=sub)
            arm.register()
            arms.append(arm)
        ops = {}  # (sub, name) -> (status url, expected final status)
        for i, arm in enumerate(arms):
            for n in range(2):
                name = f"c{n}"
                r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name))
                expect_eq(r.status, 201, f"create {arm.subscription}/{name} ({r!r})")
                ops[(arm.subscription, name)] = r.header("Azure-AsyncOperation")
        # Let the first creates finish, then update one cluster and delete another in each
        # subscription while the rest still provision.
        for arm in arms:
            url = ops[(arm.subscription, "c0")]
            wait_until(lambda: arm.call("GET", url).body["status"] == "Succeeded", timeout=60,
                       what=f"create of {arm.subscription}/c0")
        updates, deletes = {}, {}
        for i, arm in enumerate(arms):
            # The same caller through the other frontend (operations are visible to their caller).
            other = Arm(endpoints[(i + 1) % 2], subscription=arm.subscription, tenant=arm.tenant,
                        client_id=arm.client_id)
            r = other.call("PATCH", arm.cluster_path("c0"), {"tags": {"round": "2"}})
            expect_eq(r.status, 202, f"update {arm.subscription}/c0 ({r!r})")
            updates[arm.subscription] = r.header("Azure-AsyncOperation")
            r = arm.call("PUT", arm.cluster_path("c2"), arm.cluster_body("c2"))
            expect_eq(r.status, 201, f"create {arm.subscription}/c2 ({r!r})")
            r = other.call("DELETE", arm.cluster_path("c2"))
            expect_eq(r.status, 202, f"delete {arm.subscription}/c2 while creating ({r!r})")
            deletes[arm.subscription] = r.header("Azure-AsyncOperation")

        # Kill the backend that holds shard 0 (the orphan collector) mid-run.
        victim = next(o for o in backends if 0 in shards_held(backends[o], o))
        survivor = next(o for o in backends if o != victim)
        killed_at = time.monotonic()
        backends[victim].kill(signal.SIGKILL)
        backends[victim].p.wait(timeout=10)
        wait_until(lambda: len(shards_held(backends[survivor], survivor)) == SHARDS, timeout=15,
                   interval=0.05, what=f"{survivor} to take every shard over")
        failover = time.monotonic() - killed_at
        print(f"failover: {survivor} held all {SHARDS} shards {failover:.2f}s after the kill of {victim}",
              flush=True)
        expect(failover < 5.0, f"failover took {failover:.2f}s (target under 5 s)")

        # Everything ends: creates Succeeded, updates Succeeded, deletes Succeeded and gone.
        for arm in arms:
            seen, final = arm.poll_operation(ops[(arm.subscription, "c1")], timeout=90, interval=0.2)
            expect_eq(seen[-1], "Succeeded", f"create {arm.subscription}/c1 ({final})")
            seen, final = arm.poll_operation(updates[arm.subscription], timeout=90, interval=0.2)
            expect_eq(seen[-1], "Succeeded", f"update {arm.subscription}/c0 ({final})")
            seen, final = arm.poll_operation(deletes[arm.subscription], timeout=90, interval=0.2)
            expect_eq(seen[-1], "Succeeded", f"delete {arm.subscription}/c2 ({final})")
            g = arm.call("GET", arm.cluster_path("c0"))
            expect_eq(g.body["tags"], {"round": "2"}, f"{arm.subscription}/c0 tags")
            expect_eq(g.body["properties"]["provisioningState"], "Succeeded", f"{arm.subscription}/c0 state")
            expect_eq(arm.call("GET", arm.cluster_path("c2")).status, 404, f"{arm.subscription}/c2 after delete")

        # A backend started again rejoins and takes its share back.
        backends["be-3"] = ctx.backend(store, cs_url, ["--owner", "be-3"])
        wait_until(lambda: len(shards_held(backends["be-3"], "be-3")) == SHARDS // 2, timeout=20,
                   interval=0.2, what="the new backend to take half the shards")
        arm = arms[0]
        r = arm.call("DELETE", arm.cluster_path("c1"))
        expect_eq(r.status, 202, f"delete {arm.subscription}/c1 ({r!r})")
        seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=90, interval=0.2)
        expect_eq(seen[-1], "Succeeded", f"delete after the rebalance ({final})")
        ctx.check(store, cs_url)


if __name__ == "__main__":
    pg.skip_unless_available()
    run_tests([test_two_frontends_two_backends_kill_one])
