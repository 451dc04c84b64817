#!/usr/bin/env python3
"""hcprp on a replicated PostgreSQL (pg_auto_failover: a monitor, a primary and a synchronous
standby, pg_ha.py) through a failover and a switchover under load.

Two frontends, two backends and the Cluster Service simulator all take the multi-host store URL
(postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/hcprp?target_session_attrs=read-write). Worker
threads create and delete clusters through both frontends (ha_load.WriteLoad) while a change-feed
reader follows the store's feed (ha_load.FeedReader). Mid-load:

- test_primary_killed: the primary's postgres and pg_autoctl are killed with SIGKILL (the machine
  died); the monitor promotes the standby. Every process reconnects by itself: the frontends answer
  503 + Retry-After until the new primary takes writes, then work again.
- test_planned_switchover: `pg_autoctl perform switchover`.

Then: every acknowledged operation present and terminal, names present or absent as the answers say,
exactly one Cluster Service cluster per present name and never two for a name, the feed read without a gap and without a
change twice, its numbers naming the same changes on the new primary, and `hcprp check` clean. The
tests print the write unavailability (last acknowledged write before the fault to the first after).

Each round also prints the failover's steps in seconds after the fault, from the monitor's events
and the new primary's server log (pg_ha.FAILOVER_STEPS, SERVER_STEPS), and when the first write was
acknowledged.

HCPRP_HA_ROUNDS (default 1) repeats the fault that many times in each test (the old primary rejoins
as a standby between rounds); HCPRP_HA_MONITOR names the settings (pg_ha.PROFILES: "fast", the
default, is the tests' own; "previous" and "older" the tuned timings these replaced; "default"
pg_auto_failover's; bench/pg_ha/run.py compares them). Exits 77 (skipped) when pg_autoctl or the
server binaries are absent.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)

import e2e  # noqa: E402
import ha_load  # noqa: E402
import pg_ha  # noqa: E402
from e2e import expect, run_tests  # noqa: E402

ROUNDS = int(os.environ.get("HCPRP_HA_ROUNDS", "1"))
MONITOR, NODES = pg_ha.PROFILES[os.environ.get("HCPRP_HA_MONITOR", "fast")]


def start_layout(ctx, ha):
    store = ha.url()
    cs_url, _ = ctx.clusters_service(profile="demo", time_scale="0.2")
    ep1, _ = ctx.frontend(store, cs_url)
    ep2, _ = ctx.frontend(store, cs_url)
    # A create whose first COMMIT answer was lost in the failover has no Cluster Service object
    # until the backend's recovery grace passes: shortened to fit the test.
    for owner in ("be-1", "be-2"):
        ctx.backend(store, cs_url, ["--owner", owner, "--create-recovery-seconds", "10"])
    arms = ha_load.make_arms([ep1, ep2])
    arms[0].register()
    return store, cs_url, arms


def run_with_faults(ctx, fault, label, outage_expected):
    started = time.monotonic()
    with pg_ha.PgHaCluster(monitor_settings=MONITOR, node_settings=NODES) as ha:
        store, cs_url, arms = start_layout(ctx, ha)
        load = ha_load.WriteLoad(arms, workers=4)
        reader = ha_load.FeedReader(os.path.join(ha.bin, "psql"), ha.url())
        feed = ha_load.FeedThread(reader)
        load.start()
        feed.start()
        gaps = []
        try:
            for rnd in range(ROUNDS):
                before = ha.wait_primary()
                ha.wait_states(list(ha.nodes), timeout=180)  # the standby is in sync again
                t0 = time.monotonic()
                ha_load.wait_until(lambda: sum(1 for r in load.acked_writes() if r.start >= t0) >= 10,
                                   timeout=60, what="writes acknowledged before the fault")
                fault_at, fault_wall = time.monotonic(), time.time()
                fault(ha, before)
                after = ha.wait_primary(other_than=before, timeout=180)
                settled_at = time.monotonic()
                load.wait_acked_after(settled_at)
                last, first, gap = load.unavailability(fault_at, settled_at)
                gaps.append(gap)
                print(f"{label} round {rnd + 1}: {before} -> {after}; writes unavailable {gap:.2f}s "
                      f"(from {last - fault_at:+.2f}s to {first - fault_at:+.2f}s after the fault; the "
                      f"monitor had the new primary at {settled_at - fault_at:+.2f}s)", flush=True)
                steps = pg_ha.failover_steps(ha.events_since(fault_wall), before, after)
                steps.update(pg_ha.server_steps(ha.nodes[after].pgdata, fault_wall))
                steps = dict(sorted(steps.items(), key=lambda kv: kv[1]))
                steps["first write acknowledged"] = first - fault_at
                print(f"{label} round {rnd + 1} steps: " +
                      "; ".join(f"{name} {t:+.2f}s" for name, t in steps.items()), flush=True)
                if ha.nodes[before].proc is None:
                    ha.start_node(before)  # killed: it rejoins as a standby
        except BaseException as e:
            # Stopping the load below can fail too (its threads wait for a primary) and would hide this.
            print(f"{label}: failed in round {len(gaps) + 1}: {type(e).__name__}: {e}", flush=True)
            raise
        finally:
            load.stop()
            feed.stop()
        ha.wait_states(list(ha.nodes), timeout=180)
        acked, names, orphans = load.verify(cs_url)
        numbers = reader.recheck()
        print(f"{label}: {acked} acknowledged operations on {names} names, all present and terminal; "
              f"{load.count(503)} answers 503 (with Retry-After), {load.count(409)} retried creates found "
              f"their first attempt committed; {len(orphans)} deleted clusters left to the orphan collector "
              f"{orphans}; feed read {numbers} changes without gap or repeat, {reader.behind()}", flush=True)
        # A killed primary is away for seconds; a switchover may go by with every call rerun.
        expect(load.count(503) > 0 or not outage_expected, "the load never saw the failover")
        check(store, cs_url, gc_window=int(time.monotonic() - started) + 60 if orphans else 0)
        return gaps


def check(store, cs_url, gc_window):
    """hcprp check, clean; Cluster Service objects younger than `gc_window` seconds without a resource
    are not violations (the backend's orphan collector deletes them once they are older)."""
    r = subprocess.run([e2e.ARGS.hcprp, "check", "--store", store, "--clusters-service", cs_url,
                        "--gc-window-seconds", str(gc_window), "--json", "--tls-dir", e2e.TLS.dir],
                       capture_output=True, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    expect(r.returncode == 0, f"hcprp check exited {r.returncode}: {out} {r.stderr.decode()[-2000:]}")


def test_primary_killed(ctx):
    run_with_faults(ctx, lambda ha, primary: ha.kill_node(primary), "kill -9 of the primary", True)


def test_planned_switchover(ctx):
    run_with_faults(ctx, lambda ha, primary: ha.switchover(), "switchover", False)


if __name__ == "__main__":
    pg_ha.skip_unless_available()
    run_tests([test_primary_killed, test_planned_switchover])
