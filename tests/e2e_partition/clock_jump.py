#!/usr/bin/env python3
"""A backend whose wall clock jumps forward and back while it holds shard leases.

PostgreSQL, the Cluster Service simulator, one frontend and two backends each in their own network
namespace; backend be1 runs under libfaketime (Debian package `faketime`), its wall-clock offset read from
a file the test rewrites (its monotonic clock untouched, as when NTP steps the clock). With the backends
holding 4 shards each and clients creating and deleting clusters, be1's clock jumps JUMP seconds forward,
back to true, JUMP seconds back, and to true again, HOLD seconds each. Read from the store's own record of
committed writes (audit.py), on the real clock of the machine:

  - stolen: a lease taken from a backend less than a TTL after that backend last renewed it;
  - overheld: a lease written with an expiry more than a TTL (plus a margin) after its commit, which would
    keep a dead backend's shards from the others that much longer.

Neither may happen, no backend may commit a write after a takeover, and the verdict of the other partition
tests holds. Exits 77 (skipped) when not root or when the PostgreSQL server binaries are absent; fails when
libfaketime is not installed (scripts/install-deps.sh installs it).
"""

import glob
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

SUBSCRIPTIONS = [f"9a771710-0000-4000-8000-{i + 200:012d}" for i in range(4)]
TTL = 3.0  # --lease-ttl-ms default
JUMP = 30
HOLD = 6.0
MARGIN = 0.5


def libfaketime():
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") + glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"))
    return found[0] if found else None


def set_offset(path, seconds):
    with open(path + ".tmp", "w") as f:
        f.write(f"{seconds:+d}\n")
    os.replace(path + ".tmp", path)


def lease_anomalies(writes):
    """(stolen, overheld) on the machine's clock: see the module's docstring."""
    stolen, overheld = [], []
    last = {}
    for w in writes:
        if w.tbl != "leases":
            continue
        name = (w.container, w.pk, w.key)
        prev = last.get(name)
        if prev is not None and prev.owner and w.owner and w.owner != prev.owner and w.at - prev.at < TTL:
            stolen.append((prev, w))
        if w.owner and w.expires_at is not None and w.expires_at - w.at > TTL + MARGIN:
            overheld.append(w)
        last[name] = w
    return stolen, overheld


def test_backend_clock_jumps(ctx):
    lib = libfaketime()
    offset = ctx.path("be1-clock-offset")
    set_offset(offset, 0)
    with netns.Net() as net:
        d = deployment.Deployment(ctx, net, frontends=1, backends=0)
        d.start_backend("be2")
        # be1 last: its namespace and process are the ones the clock applies to.
        d.start_backend("be1", env={"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": offset,
                                    "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_CACHE_DURATION": "1"})
        be = {o: p for o, (_, p) in d.backends.items()}
        wait_until(lambda: all(len(shards_held(p, o)) == 4 for o, p in be.items()), timeout=20, interval=0.2,
                   what="the backends to hold 4 shards each")
        audit.install(d.pg)
        _, ep, _ = d.frontends[0]
        stop = threading.Event()
        loads = []
        for i, sub in enumerate(SUBSCRIPTIONS):
            Arm(ep, subscription=sub).register()
            loads.append(Load(i, ep, sub, 3, stop))
        for ld in loads:
            ld.start()
        time.sleep(2)
        for step in (JUMP, 0, -JUMP, 0):
            set_offset(offset, step)
            print(f"be1's clock {step:+d}s", flush=True)
            time.sleep(HOLD)
        wait_until(lambda: all(len(shards_held(p, o)) == 4 for o, p in be.items()), timeout=20, interval=0.2,
                   what="the backends to hold 4 shards each after the jumps")
        stop.set()
        for ld in loads:
            ld.join(timeout=30)

        writes = audit.read(d.pg)
        stolen, overheld = lease_anomalies(writes)
        renewals = sum(1 for w in writes if w.tbl == "leases")
        print(f"{renewals} lease writes; stolen: {len(stolen)}, overheld: {len(overheld)}", flush=True)
        for prev, w in stolen[:5]:
            print(f"  stolen: {w.key} of {prev.owner} by {w.owner} {w.at - prev.at:.2f}s after its renewal",
                  flush=True)
        for w in overheld[:5]:
            print(f"  overheld: {w.key} by {w.owner} until {w.expires_at - w.at:.1f}s after its commit", flush=True)
        for owner, (bnode, _) in d.backends.items():
            taken, _ = audit.writes_after_takeover(writes, owner, bnode.ip)
            expect_eq(taken, [], f"writes {owner} committed after its leases were taken over")
        expect_eq(len(stolen), 0, "leases stolen because of a clock jump")
        expect_eq(len(overheld), 0, "leases overheld because of a clock jump")
        expect_eq([b for ld in loads for b in ld.bad], [], "answers that were 5xx without Retry-After, or hangs")
        deployment.verdict(d, loads)


if __name__ == "__main__":
    netns.skip_unless_root()
    pg.skip_unless_available()
    if libfaketime() is None:
        print("libfaketime not found (Debian: apt-get install faketime)", flush=True)
        raise SystemExit(1)
    run_tests([test_backend_clock_jumps])
