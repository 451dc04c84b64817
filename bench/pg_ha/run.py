#!/usr/bin/env python3
"""PostgreSQL high-availability figures: failovers under load, and the cost of synchronous replication.

1. Failovers: tests/e2e_pg_ha/failover.py (test_primary_killed) with HCPRP_HA_ROUNDS=--rounds: two
   frontends, two backends and the Cluster Service simulator on a pg_auto_failover group (monitor,
   primary, synchronous standby), create/delete load from 4 threads, the primary killed with SIGKILL
   --rounds times (the old primary rejoins as a standby between rounds). Prints the write
   unavailability of each round; at the end every acknowledged operation must be present and
   terminal (0 lost), the change feed read without gap or repeat, and `hcprp check` clean.
   Each round's failover steps (seconds after the kill, from the monitor's events) are printed and
   their medians summed up. --monitor names the settings (pg_ha.PROFILES): fast (the tests' own),
   previous (the tuned timings before them: 2 s unhealthy timeout, 1 s health checks), older (3 s
   unhealthy timeout, 5 s demote timeout) or default (pg_auto_failover's); several, comma-separated,
   run one series after the other in the same run. --hcprp-before names an older hcprp binary (a
   baseline): each series runs with it first, then with --hcprp.
2. Throughput: bench/frontend's frontend_bench, PUT create only, against a single PostgreSQL server
   (tests/e2e_pg/pg.py) and against the primary of a pg_auto_failover pair through the multi-host
   URL, alternately, --repeat times each, in the same run.

Usage: python3 bench/pg_ha/run.py --hcprp build/release/hcprp --hcpctl build/release/hcpctl
           --frontend-bench build/release/bench/frontend/frontend_bench [--rounds 10]
           [--monitor fast,previous] [--hcprp-before OLD/hcprp] [--repeat 2] [--duration 10]
           [--skip-failovers] [--skip-throughput]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "..", "tests")
sys.path.insert(0, os.path.join(TESTS, "e2e_pg_ha"))
sys.path.insert(0, os.path.join(TESTS, "e2e_pg"))

import pg  # noqa: E402
import pg_ha  # noqa: E402


def failovers(args, monitor, hcprp, label):
    env = dict(os.environ, HCPRP_HA_ROUNDS=str(args.rounds), HCPRP_HA_MONITOR=monitor)
    print(f"\n{label}: {hcprp}, {monitor} settings", flush=True)
    cmd = [sys.executable, os.path.join(TESTS, "e2e_pg_ha", "failover.py"), "--hcprp", hcprp,
           "--hcpctl", args.hcpctl, "-k", "primary_killed"]
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=600 + 120 * args.rounds)
    out = p.stdout.decode("utf-8", "replace")
    gaps = [float(m) for m in re.findall(r"writes unavailable ([0-9.]+)s", out)]
    steps = {}  # step name -> [seconds after the fault, one per round]
    for line in out.splitlines():
        if "round" in line or "acknowledged operations" in line or "PASS" in line or "FAIL" in line:
            print(line)
        m = re.search(r"round \d+ steps: (.*)", line)
        for name, t in re.findall(r"([a-z_ -]+?) ([+-][0-9.]+)s", m.group(1)) if m else []:
            steps.setdefault(name.strip(), []).append(float(t))
    if p.returncode != 0:
        print(out[-5000:])
        print(p.stderr.decode("utf-8", "replace")[-3000:])
        raise SystemExit(f"failover run failed (exit {p.returncode})")
    summary = (f"{label}: write unavailability over {len(gaps)} failovers ({monitor} settings): "
               f"median {statistics.median(gaps):.2f} s, min {min(gaps):.2f} s, max {max(gaps):.2f} s; "
               f"acknowledged operations lost: 0") if gaps else f"{label}, {monitor}: no failover measured"
    if steps:
        summary += "\n  median seconds after the kill: " + "; ".join(
            f"{name} {statistics.median(ts):+.2f}" for name, ts in steps.items())
    print(f"\n{summary}\n", flush=True)
    return summary


def put_rate(args, url):
    p = subprocess.run([args.frontend_bench, "--stores", "postgresql", "--pg-url", url, "--only", "put",
                        "--duration", str(args.duration)], capture_output=True, timeout=args.duration * 4 + 120)
    out = p.stdout.decode("utf-8", "replace")
    m = re.search(r"^postgresql\s+PUT\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+(\d+)", out, re.M)
    if m is None:
        raise SystemExit(f"frontend_bench printed no PUT figure:\n{out[-3000:]}\n{p.stderr.decode()[-2000:]}")
    return float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))


def throughput(args):
    single = pg.PgServer(database="bench")
    ha = None
    try:
        ha = pg_ha.PgHaCluster(database="bench", monitor_settings=pg_ha.FAST_MONITOR_SETTINGS,
                               node_settings=pg_ha.FAST_NODE_SETTINGS)
        ha.wait_states(list(ha.nodes))
        primary = ha.primary()
        print(f"\nPUT create throughput (frontend_bench, {args.duration} s each, alternating):")
        print(f"  HA primary {primary}: synchronous_standby_names = "
              f"{ha.node_sql(primary, 'SHOW synchronous_standby_names', database='bench')!r}, "
              f"synchronous_commit = {ha.node_sql(primary, 'SHOW synchronous_commit', database='bench')}")
        rates = {"single": [], "ha": []}
        for i in range(args.repeat):
            for kind, url in (("single", single.url()), ("ha", ha.url())):
                r = put_rate(args, url)
                rates[kind].append(r[0])
                print(f"  {kind:6s} run {i + 1}: {r[0]:8.0f} req/s  p50 {r[1]:.3f} ms  p99 {r[2]:.3f} ms  "
                      f"non-2xx {r[3]}", flush=True)
        s, h = statistics.median(rates["single"]), statistics.median(rates["ha"])
        print(f"  median: single server {s:.0f} req/s, HA pair {h:.0f} req/s ({100 * h / s:.0f}% of single)")
    finally:
        single.close()
        if ha:
            ha.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcprp", required=True)
    ap.add_argument("--hcpctl", required=True)
    ap.add_argument("--hcprp-before", help="an older hcprp binary, run first in each series as the baseline")
    ap.add_argument("--frontend-bench")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--monitor", default="fast",
                    help="comma-separated names of settings: " + ", ".join(pg_ha.PROFILES))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--skip-failovers", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    args.hcprp, args.hcpctl = os.path.abspath(args.hcprp), os.path.abspath(args.hcpctl)
    binaries = [("before", os.path.abspath(args.hcprp_before))] if args.hcprp_before else []
    binaries.append(("hcprp", args.hcprp))
    if not pg_ha.available():
        raise SystemExit("pg_autoctl or the PostgreSQL server binaries not found "
                         "(Debian: apt-get install postgresql postgresql-15-auto-failover)")
    monitors = args.monitor.split(",")
    unknown = [m for m in monitors if m not in pg_ha.PROFILES]
    if unknown:
        raise SystemExit(f"--monitor: unknown timings {unknown}; known: {', '.join(pg_ha.PROFILES)}")
    if not args.skip_failovers:
        summaries = [failovers(args, m, hcprp, label) for m in monitors for label, hcprp in binaries]
        if len(summaries) > 1:
            print("\n".join(summaries))
    if not args.skip_throughput:
        if not args.frontend_bench:
            raise SystemExit("--frontend-bench is needed for the throughput figures")
        throughput(args)


if __name__ == "__main__":
    main()
