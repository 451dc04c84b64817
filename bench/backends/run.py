#!/usr/bin/env python3
"""Backend scale-out benchmark: do two backends finish about twice the operations of one?

For each backend count (default 1 and 2), on one throwaway PostgreSQL server (tests/e2e_pg/pg.py), a
fresh schema and a fresh Cluster Service simulator (instant profile: every object is ready at once):

 1. with no backend running, create N clusters through one frontend (PUT, --threads in parallel),
    spread over --subscriptions subscriptions, so that N Create operations wait in Accepted;
 2. start the backends together (default settings: 8 shards, 3 s leases) and time how long until
    every operation is Succeeded (counted in PostgreSQL every 100 ms).

Throughput = operations finished per second between 10% and 90% of N done, so that the backends'
start (lease balancing, first resync) does not count; the overall rate (N / drain time) is printed
beside it. While draining, the store's PostgreSQL sessions are sampled (pg_stat_activity) and the
average number of active sessions per wait event printed ("CPU": running). Prints one line per count and the ratio of the
steady rates against one backend.

Usage: python3 bench/backends/run.py --hcprp build/hcprp [--n 2000] [--counts 1,2]
"""

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e_pg"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))

import pg  # noqa: E402
from e2e import Arm  # noqa: E402


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def spawn(argv, logfile):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(logfile, "ab"), stdin=subprocess.DEVNULL,
                            text=True, start_new_session=True)


def wait_line(p, marker, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"process exited before printing {marker!r}")
        if marker in line:
            return line.strip()
    raise RuntimeError(f"timed out waiting for {marker!r}")


def url_in(line):
    return next(w for w in line.split() if w.startswith("http://")).rstrip(".,")


def cpu_seconds(pid):
    """utime + stime of a process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def postgres_cpu():
    """CPU seconds of every process of the postgres user (the throwaway server and its backends)."""
    total = 0.0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}").st_uid == pg.pwd.getpwnam(pg.SERVER_USER).pw_uid:
                    total += cpu_seconds(d)
            except (OSError, KeyError):
                continue
    return total


class Psql:
    """One psql session kept open (spawning psql per sample would cost more CPU than it measures)."""

    def __init__(self, pgs):
        argv = [os.path.join(pgs.bin, "psql"), "-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p", str(pgs.port),
                "-U", "postgres", "-d", pgs.database]
        if pgs.as_root:
            argv = ["runuser", "-u", pg.SERVER_USER, "--", *argv]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=pgs.dir)

    def query(self, sql):
        self.p.stdin.write(sql.rstrip(";") + ";\n\\echo --end--\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("psql exited")
            if line.strip() == "--end--":
                return lines
            lines.append(line.strip())

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


def sample(session, schema):
    """(operations Succeeded, wait events of the store's other sessions) in one query."""
    lines = session.query(f"SELECT count(*)::text FROM {schema}.documents WHERE resource_type = "
                   f"convert_to('microsoft.redhatopenshift/hcpoperationsstatus', 'UTF8') AND NOT non_terminal "
                   f"UNION ALL SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity "
                   f"WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
    return int(lines[0] if lines else 0), lines[1:]


def steady_rate(samples, n):
    """Operations per second between 10% and 90% of n done (the backends' start excluded)."""
    lo = next((t, d) for t, d in samples if d >= n * 0.1)
    hi = next((t, d) for t, d in samples if d >= n * 0.9)
    return (hi[1] - lo[1]) / (hi[0] - lo[0]) if hi[0] > lo[0] else float("nan")


def run_one(args, pgs, count, workdir):
    schema = f"bench_{count}"
    store = pgs.url(schema=schema)
    procs = []
    session = Psql(pgs)
    try:
        cs = spawn([args.hcprp, "clusters-service", "--listen", "127.0.0.1:0", "--data-dir",
                    os.path.join(workdir, f"cs{count}"), "--profile", "instant", "--provisioner", "timed",
                    # plain HTTP on loopback, /control on the same listener: the benchmark measures backends
                    "--insecure-http", "--control-listen", "off"],
                   os.path.join(workdir, "cs.log"))
        procs.append(cs)
        cs_url = url_in(wait_line(cs, "listening on"))
        if args.cs_latency_ms > 0:
            # A Cluster Service across a network: every read waits that long (the simulator's HTTP faults).
            req = urllib.request.Request(cs_url + "/control/faults/http", method="PUT",
                                         data=json.dumps({"delay_ms": args.cs_latency_ms,
                                                          "methods": ["GET"]}).encode())
            urllib.request.urlopen(req, timeout=10).read()
        fe = spawn([args.hcprp, "frontend", "--store", store, "--clusters-service", cs_url, "--listen",
                    "127.0.0.1:0", "--insecure-http"], os.path.join(workdir, "fe.log"))
        procs.append(fe)
        endpoint = url_in(wait_line(fe, "listening on"))
        subs = [Arm(endpoint, subscription=f"be0c0de0-0000-4000-8000-{i:012d}") for i in range(args.subscriptions)]
        for a in subs:
            a.register()

        def create(i):
            a = subs[i % len(subs)]
            r = a.call("PUT", a.cluster_path(f"c{i}"), a.cluster_body(f"c{i}"), timeout=60)
            if r.status != 201:
                raise RuntimeError(f"create c{i}: {r!r}")

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.threads) as ex:
            list(ex.map(create, range(args.n)))
        log(f"{count} backend(s): {args.n} creates accepted in {time.monotonic() - t0:.1f}s")

        wal0 = [float(v) for v in session.query("SELECT wal_bytes || ' ' || wal_sync FROM pg_stat_wal")[0].split()]
        start = time.monotonic()
        cs_cpu0, pg_cpu0 = cpu_seconds(cs.pid), postgres_cpu()
        backends = []
        for b in range(count):
            p = spawn([args.hcprp, "backend", "--store", store, "--clusters-service", cs_url, "--owner",
                       f"bench-{count}-{b}", *args.backend_args.split()],
                      os.path.join(workdir, f"be{count}-{b}.log"))
            procs.append(p)
            backends.append(p)
        samples, waits, polls = [], collections.Counter(), 0
        while True:
            done, active = sample(session, schema)
            samples.append((time.monotonic() - start, done))
            if done > 0:
                waits.update(active)
                polls += 1
            if done >= args.n:
                break
            if time.monotonic() - start > args.timeout:
                raise RuntimeError(f"only {done} of {args.n} succeeded after {args.timeout}s")
            time.sleep(0.05)
        took = time.monotonic() - start
        rate = steady_rate(samples, args.n)
        if os.environ.get("BENCH_TRACE"):
            print([(round(t, 1), d) for t, d in samples[::10]])
        first = next(t for t, d in samples if d > 0)
        be_cpu = sum(cpu_seconds(p.pid) for p in backends)
        top = ", ".join(f"{w} {c / polls:.2f}" for w, c in waits.most_common(6))
        log(f"result: backends={count} n={args.n} drain={took:.2f}s (first done at {first:.2f}s) steady throughput "
            f"(10%-90% done)={rate:.0f} ops/s, overall {args.n / took:.0f} ops/s; CPU seconds "
            f"during the drain: backends {be_cpu:.1f}, Cluster Service simulator {cpu_seconds(cs.pid) - cs_cpu0:.1f}, "
            f"PostgreSQL {postgres_cpu() - pg_cpu0:.1f} (of {took * os.cpu_count():.1f} available)")
        wal1 = [float(v) for v in session.query("SELECT wal_bytes || ' ' || wal_sync FROM pg_stat_wal")[0].split()]
        log(f"  WAL per operation: {(wal1[0] - wal0[0]) / args.n / 1024:.1f} KiB, "
            f"{(wal1[1] - wal0[1]) / args.n:.2f} flushes")
        log(f"  PostgreSQL sessions active while draining, average {sum(waits.values()) / polls:.2f} by wait "
            f"event: {top}")
        return rate
    finally:
        session.close()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcprp", required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--counts", default="1,2")
    ap.add_argument("--subscriptions", type=int, default=64)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--backend-args", default="", help="extra arguments of every backend, e.g. "
                    "'--check-concurrency 1'")
    ap.add_argument("--cs-latency-ms", type=int, default=0,
                    help="delay every Cluster Service read by this much (a remote Cluster Service)")
    ap.add_argument("--keep", action="store_true", help="keep the processes' logs (the folder is printed)")
    args = ap.parse_args()
    args.hcprp = os.path.abspath(args.hcprp)
    if pg.find_binaries() is None:
        sys.exit("PostgreSQL server binaries not found (apt-get install postgresql)")
    workdir = tempfile.mkdtemp(prefix="hcprp-bench-backends-")
    rates = {}
    try:
        with pg.PgServer() as pgs:
            for count in [int(c) for c in args.counts.split(",")]:
                rates[count] = run_one(args, pgs, count, workdir)
    finally:
        if args.keep:
            log(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    base = rates.get(1)
    for count, rate in rates.items():
        ratio = f" ({rate / base:.2f}x one backend)" if base else ""
        print(f"backends={count}: {rate:.0f} operations/s{ratio}")


if __name__ == "__main__":
    main()
