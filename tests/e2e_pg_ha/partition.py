#!/usr/bin/env python3
"""The PostgreSQL primary cut off by a network partition while it keeps running, under load.

Each data node of the pg_auto_failover group runs in a network namespace of its own (netns_pg.py),
joined by a bridge to the caller's namespace, where the monitor, the Cluster Service simulator, two
frontends, two backends and the test run (the layout of failover.py, on the nodes' addresses).

test_primary_partitioned: mid-load every packet to and from the primary is dropped: its connections hang, as across a real
partition, while its postgres and pg_autoctl keep running. Then:

- the monitor promotes the standby and writes are acknowledged again;
- a write sent straight to the old primary during the partition (from inside its namespace) is not
  acknowledged: with synchronous replication its COMMIT waits for a standby that no longer
  replicates from it, until the old primary is demoted and the session ends with an error;
- after the heal the old primary rejoins as a standby, its unacknowledged write gone from both nodes;
- every acknowledged operation present and terminal, names as the answers say, one Cluster Service
  cluster per present name, the change feed read without gap or repeat, `hcprp check` clean.

test_old_primary_reachable_by_one_frontend: a partial partition. The frontends run in namespaces of
their own (fe1, fe2), the monitor, the Cluster Service simulator, the backends and the test in the
caller's. The primary is cut from its standby, the caller's namespace (so from the monitor) and fe2,
but not from fe1: the monitor promotes the standby, fe2 and the backends find the new primary, while fe1
still reaches the old one, which still calls itself writable. Then, besides the verdict above:

- every answer fe1 gives meanwhile is a 2xx or 4xx or a 503 with Retry-After (the old primary's COMMITs
  wait for the standby; the frontend's call gives up after the store's query timeout), never another
  5xx and never no answer; no write acknowledged through fe1 is missing afterwards (the old primary
  acknowledged nothing that its rewind then dropped);
- fe1 acknowledges writes again, on the new primary (printed: how long after the cut and whether before
  or after the heal).

Prints the write unavailability and the counts. Needs root (exits 77, skipped, only when not root or
when pg_autoctl or the server binaries are absent).
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)

import failover  # noqa: E402
import ha_load  # noqa: E402
import netns_pg  # noqa: E402  (puts tests/e2e_partition on the path)
import deployment  # noqa: E402
import e2e  # noqa: E402
import pg_ha  # noqa: E402
from e2e import expect, expect_eq, run_tests, url_after  # noqa: E402

PROBE_TABLE = "partition_probe"


def start_probe(ha, node):
    """A write sent straight to `node` (from its own namespace): its psql process."""
    argv = ha.node_psql(node, f"INSERT INTO {PROBE_TABLE} VALUES (1)")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def probe_rows(ha, node):
    return int(ha.node_sql(node, f"SELECT count(*) FROM {PROBE_TABLE}"))


def test_primary_partitioned(ctx):
    started = time.monotonic()
    with netns_pg.Network(["node1", "node2"]) as net, \
            pg_ha.PgHaCluster(monitor_settings=pg_ha.FAST_MONITOR_SETTINGS, network=net) as ha:
        store, cs_url, arms = failover.start_layout(ctx, ha)
        old = ha.wait_primary()
        ha.wait_states(list(ha.nodes), timeout=120)
        ha.node_sql(old, f"CREATE TABLE {PROBE_TABLE} (id integer PRIMARY KEY)")
        print(f"group and layout up in {time.monotonic() - started:.1f}s", flush=True)
        load = ha_load.WriteLoad(arms, workers=4)
        reader = ha_load.FeedReader(os.path.join(ha.bin, "psql"), ha.url(extra="&connect_timeout=2"))
        feed = ha_load.FeedThread(reader)
        load.start()
        feed.start()
        probe = None
        try:
            t0 = time.monotonic()
            ha_load.wait_until(lambda: sum(1 for r in load.acked_writes() if r.start >= t0) >= 10,
                               timeout=60, what="writes acknowledged before the partition")
            cut_at = time.monotonic()
            net.cut(old)
            probe = start_probe(ha, old)
            new = ha.wait_primary(other_than=old, timeout=60)
            promoted_at = time.monotonic()
            load.wait_acked_after(promoted_at)
            # Its keeper demotes a primary that has lost the monitor and its standby for 20 s
            # (network_partition_timeout): on a slow machine the write may fail before the heal.
            ended_cut_off = probe.poll() is not None
            last, first, gap = load.unavailability(cut_at, promoted_at)
            heal_at = time.monotonic()
            net.heal(old)
            _, err = probe.communicate(timeout=120)
            probe_end = time.monotonic()
            expect(probe.returncode != 0, "the write sent to the cut-off old primary was acknowledged")
            when = "during the partition" if ended_cut_off else f"{probe_end - heal_at:.1f}s after the heal"
            states = ha.wait_states(list(ha.nodes), timeout=120)
            rejoined_at = time.monotonic()
            expect_eq(states[old], ("secondary", "secondary"), f"{old} after the heal")
            print(f"partition of the primary {old}: {new} promoted {promoted_at - cut_at:.2f}s after the cut; "
                  f"writes unavailable {gap:.2f}s (from {last - cut_at:+.2f}s to {first - cut_at:+.2f}s); a write "
                  f"sent straight to {old} during the partition ({heal_at - cut_at:.1f}s) was not acknowledged "
                  f"and failed {when} "
                  f"(psql exit {probe.returncode}: {err.decode('utf-8', 'replace').strip().splitlines()[-1:]}); "
                  f"{old} a standby again {rejoined_at - heal_at:.1f}s after the heal", flush=True)
        finally:
            if probe is not None and probe.poll() is None:
                probe.kill()
                probe.wait()
            load.stop()
            feed.stop()
        for node in ha.nodes:
            expect_eq(probe_rows(ha, node), 0, f"rows of the unacknowledged write on {node}")
        verdict("partition", [load], reader, store, cs_url, started)


def verdict(label, loads, reader, store, cs_url, started):
    """Every acknowledged operation present and terminal, names as the answers say, one Cluster Service
    cluster per present name, the feed read without gap or repeat, `hcprp check` clean."""
    acked = names = 0
    orphans = []
    for load in loads:
        a, n, o = load.verify(cs_url)
        acked, names, orphans = acked + a, names + n, orphans + o
    numbers = reader.recheck()
    print(f"{label}: {acked} acknowledged operations on {names} names, all present and terminal (0 lost, "
          f"0 stuck); {sum(ld.count(503) for ld in loads)} answers 503 (with Retry-After), "
          f"{sum(ld.count(409) for ld in loads)} retried creates found their first attempt committed; "
          f"{len(orphans)} deleted clusters left to the orphan collector {orphans}; feed read {numbers} "
          f"changes without gap or repeat, {reader.behind()}", flush=True)
    failover.check(store, cs_url, gc_window=int(time.monotonic() - started) + 60 if orphans else 0)


# How long the partial partition lasts at most while fe1 does not acknowledge writes.
MOVE_WAIT = 30


def start_split_layout(ctx, ha, network):
    """The Cluster Service simulator (on the bridge's address) and two backends in the caller's
    namespace, a frontend in each of the namespaces fe1 and fe2; returns (store, Cluster Service URL,
    [an Arm for fe1, one for fe2]), each Arm a caller of a subscription of its own (the loads' checks
    account for every cluster of their subscription)."""
    net = network.net
    deployment.prepare_tls(ctx, net)
    store = ha.url()
    cs = ctx.spawn("clusters-service", [e2e.ARGS.hcprp, "clusters-service", "--listen", f"{net.host.ip}:0",
                                        "--data-dir", ctx.path("cs"), "--profile", "demo", "--time-scale", "0.2",
                                        "--tls-dir", ctx.tls.dir])
    cs_url = cs.wait_line(url_after("listening on"))
    endpoints = [deployment.spawn_frontend(ctx, network.node(fe), store, cs_url)[0] for fe in ("fe1", "fe2")]
    for owner in ("be-1", "be-2"):
        ctx.backend(store, cs_url, ["--owner", owner, "--create-recovery-seconds", "10"])
    arms = [ha_load.make_arms([e])[0] for e in endpoints]
    for arm in arms:
        arm.register()
    return store, cs_url, arms


def answers_between(load, start, end):
    """'status xN' for the answers to the requests sent from `start` to `end`, and the slowest one's time."""
    with load.lock:
        rs = [r for r in load.requests if start <= r.start < end]
    counts = {}
    for r in rs:
        counts[r.status] = counts.get(r.status, 0) + 1
    slowest = max((r.end - r.start for r in rs), default=0.0)
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())) or "none", slowest


def test_old_primary_reachable_by_one_frontend(ctx):
    started = time.monotonic()
    with netns_pg.Network(["node1", "node2", "fe1", "fe2"]) as network, \
            pg_ha.PgHaCluster(monitor_settings=pg_ha.FAST_MONITOR_SETTINGS, network=network) as ha:
        store, cs_url, (arm1, arm2) = start_split_layout(ctx, ha, network)
        old = ha.wait_primary()
        ha.wait_states(list(ha.nodes), timeout=120)
        standby = next(n for n in ha.nodes if n != old)
        print(f"group and layout up in {time.monotonic() - started:.1f}s", flush=True)
        near = ha_load.WriteLoad([arm1], workers=2, prefix="near")  # through fe1, which keeps the old primary
        far = ha_load.WriteLoad([arm2], workers=2, prefix="far")  # through fe2, which loses it
        reader = ha_load.FeedReader(os.path.join(ha.bin, "psql"), ha.url(extra="&connect_timeout=2"))
        feed = ha_load.FeedThread(reader)
        for x in (near, far, feed):
            x.start()
        try:
            t0 = time.monotonic()
            for load in (near, far):
                ha_load.wait_until(lambda: sum(1 for r in load.acked_writes() if r.start >= t0) >= 5,
                                   timeout=60, what="writes acknowledged before the partition")
            net = network.net
            cut_at = time.monotonic()
            for other in (network.node(standby), net.host, network.node("fe2")):
                net.cut(network.node(old), other)
            cut_done = time.monotonic()  # requests sent from here on meet the whole partition
            new = ha.wait_primary(other_than=old, timeout=60)
            promoted_at = time.monotonic()
            far.wait_acked_after(promoted_at)
            _, _, far_gap = far.unavailability(cut_at, promoted_at)

            def near_acked():
                return [r.end for r in near.acked_writes() if r.start >= cut_done]

            try:
                ha_load.wait_until(near_acked, timeout=max(1.0, cut_done + MOVE_WAIT - time.monotonic()),
                                   what="fe1 to acknowledge a write during the partition")
            except e2e.TestFailure:
                pass
            heal_at = time.monotonic()
            answers, slowest = answers_between(near, cut_done, heal_at)
            net.heal_all()
            near.wait_acked_after(cut_done, n=1, timeout=120)
            near_back = min(near_acked())
            states = ha.wait_states(list(ha.nodes), timeout=120)
            rejoined_at = time.monotonic()
            expect_eq(states[old], ("secondary", "secondary"), f"{old} after the heal")
            when = "during the partition" if near_back < heal_at else f"{near_back - heal_at:.1f}s after the heal"
            print(f"partial partition of the primary {old} (cut from {standby}, the monitor and fe2; fe1 still "
                  f"reaching it): {new} promoted {promoted_at - cut_at:.2f}s after the cut; fe2 writes unavailable "
                  f"{far_gap:.2f}s; fe1's answers to requests sent during the {heal_at - cut_at:.1f}s partition: "
                  f"{answers} (slowest {slowest:.1f}s); fe1 acknowledged a write again {near_back - cut_at:.1f}s "
                  f"after the cut ({when}); {old} a standby again {rejoined_at - heal_at:.1f}s after the heal",
                  flush=True)
        finally:
            near.stop_flag.set()
            far.stop_flag.set()
            for x in (near, far, feed):
                x.stop()
        verdict("partial partition", [near, far], reader, store, cs_url, started)


if __name__ == "__main__":
    netns_pg.require_root()
    pg_ha.skip_unless_available()
    run_tests([test_primary_partitioned, test_old_primary_reachable_by_one_frontend])
