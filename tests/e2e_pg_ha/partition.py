#!/usr/bin/env python3
"""The PostgreSQL primary cut off by a network partition while it keeps running, under load.

Each data node of the pg_auto_failover group runs in a network namespace of its own (netns_pg.py),
joined by a bridge to the caller's namespace, where the monitor, the Cluster Service simulator, two
frontends, two backends and the test run (the layout of failover.py, on the nodes' addresses).
Mid-load every packet to and from the primary is dropped: its connections hang, as across a real
partition, while its postgres and pg_autoctl keep running. Then:

- the monitor promotes the standby and writes are acknowledged again;
- a write sent straight to the old primary during the partition (from inside its namespace) is not
  acknowledged: with synchronous replication its COMMIT waits for a standby that no longer
  replicates from it, until the old primary is demoted and the session ends with an error;
- after the heal the old primary rejoins as a standby, its unacknowledged write gone from both nodes;
- every acknowledged operation present and terminal, names as the answers say, one Cluster Service
  cluster per present name, the change feed read without gap or repeat, `hcprp check` clean.

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
import netns_pg  # noqa: E402
import pg_ha  # noqa: E402
from e2e import expect, expect_eq, run_tests  # noqa: E402

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
        acked, names, orphans = load.verify(cs_url)
        numbers = reader.recheck()
        print(f"partition: {acked} acknowledged operations on {names} names, all present and terminal (0 lost, "
              f"0 stuck); {load.count(503)} answers 503 (with Retry-After), {load.count(409)} retried creates "
              f"found their first attempt committed; {len(orphans)} deleted clusters left to the orphan "
              f"collector {orphans}; feed read {numbers} changes without gap or repeat", flush=True)
        failover.check(store, cs_url, gc_window=int(time.monotonic() - started) + 60 if orphans else 0)


if __name__ == "__main__":
    netns_pg.require_root()
    pg_ha.skip_unless_available()
    run_tests([test_primary_partitioned])
