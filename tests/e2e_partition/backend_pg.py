#!/usr/bin/env python3
"""A backend cut off from PostgreSQL while it keeps running, under create and delete load.

PostgreSQL, one frontend and two backends each in their own network namespace, the Cluster Service
simulator in the root one. Once the backends hold 4 shards each and clients create and delete clusters in
four subscriptions, every packet between one backend and PostgreSQL is dropped (its connections hang; it
still reaches the Cluster Service). Its shard leases lapse and the other backend takes them over; the
store's own record of every committed write (audit.py: a commit-time trigger with each write's client
address) shows that the cut-off backend committed no write after the takeover, nor took a lease before it
expired. Healed, it takes its share back. Then every acknowledged operation ends, `hcprp check` is clean,
and once everything is deleted nothing is left in the store, the Cluster Service or the simulated Azure.

Exits 77 (skipped) when not root or when the PostgreSQL server binaries are absent.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import audit  # noqa: E402
import deployment  # noqa: E402
import netns  # noqa: E402
from deployment import Load, e2e, pg, shards_held  # noqa: E402
from e2e import Arm, expect, expect_eq, run_tests, wait_until  # noqa: E402

SHARDS = 8
SUBSCRIPTIONS = [f"9a771710-0000-4000-8000-{i:012d}" for i in range(4)]
CUT_SECONDS = 8  # well past the 3 s lease


def test_backend_cut_from_postgres(ctx):
    with netns.Net() as net:
        d = deployment.Deployment(ctx, net, frontends=1, backends=2)
        _, ep, _ = d.frontends[0]
        be = {o: p for o, (_, p) in d.backends.items()}
        wait_until(lambda: len(shards_held(be["be1"], "be1")) == 4 and len(shards_held(be["be2"], "be2")) == 4,
                   timeout=20, interval=0.2, what="the backends to hold 4 shards each")
        audit.install(d.pg)
        stop = threading.Event()
        loads = []
        for i, sub in enumerate(SUBSCRIPTIONS):
            Arm(ep, subscription=sub).register()
            loads.append(Load(i, ep, sub, 32, stop))
        for ld in loads:
            ld.start()
        time.sleep(4)

        victim, survivor = "be1", "be2"
        vnode = d.backends[victim][0]
        before = shards_held(be[victim], victim)
        cut_at = time.time()
        net.cut(vnode, d.pg_node)
        try:
            wait_until(lambda: len(shards_held(be[survivor], survivor)) == SHARDS, timeout=20, interval=0.05,
                       what=f"{survivor} to take every shard over")
        except e2e.TestFailure:
            print(d.pg.psql("SELECT host(client_addr), state, wait_event_type, wait_event, "
                            "now() - state_change, left(query, 100) FROM pg_stat_activity "
                            "WHERE datname = 'hcprp' ORDER BY client_addr"), flush=True)
            print("\n".join(ln for ln in open(be[survivor].log_path).read().splitlines()[-40:]
                             if "access" not in ln), flush=True)
            raise
        took = time.time() - cut_at
        print(f"cut {victim} from PostgreSQL (it held shards {sorted(before)}); {survivor} held all "
              f"{SHARDS} {took:.2f}s later", flush=True)
        time.sleep(max(0.0, CUT_SECONDS - took))
        healed_at = time.time()
        net.heal(vnode, d.pg_node)
        wait_until(lambda: len(shards_held(be[victim], victim)) == SHARDS // 2, timeout=30, interval=0.1,
                   what=f"{victim} to take its share back after the heal")
        print(f"healed after {healed_at - cut_at:.1f}s; {victim} held {SHARDS // 2} shards again "
              f"{time.time() - healed_at:.2f}s later", flush=True)
        time.sleep(3)
        stop.set()
        for ld in loads:
            ld.join(timeout=30)

        writes = audit.read(d.pg)
        swaps = audit.takeovers(writes, victim, cut_at)
        expect(swaps, f"no lease of {victim} was taken over after the cut")
        early = [(old, new) for old, new in swaps if new.at < old.expires_at]
        expect_eq(early, [], f"leases of {victim} taken before they expired")
        taken, late = audit.writes_after_takeover(writes, victim, vnode.ip)
        own = audit.fenced_writes(writes, vnode.ip)
        print(f"fence: {len(own)} writes committed by {victim}, {len(taken)} after a takeover, {len(late)} "
              f"after its leases expired; {len(swaps)} leases taken over, the first "
              f"{min(new.at - old.expires_at for old, new in swaps):.2f}s after expiry", flush=True)
        expect_eq(taken, [], f"writes {victim} committed after its leases were taken over")
        statuses = {}
        for ld in loads:
            for k, v in ld.statuses.items():
                statuses[k] = statuses.get(k, 0) + v
        print(f"answers: {statuses}", flush=True)
        expect_eq([b for ld in loads for b in ld.bad], [], "answers that were 5xx without Retry-After, or hangs")
        deployment.verdict(d, loads)


if __name__ == "__main__":
    netns.skip_unless_root()
    pg.skip_unless_available()
    run_tests([test_backend_cut_from_postgres])
