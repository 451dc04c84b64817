#!/usr/bin/env python3
"""100,000-resource benchmark: hcprp on one store holding 100,000 clusters and node pools.

Steps (one temporary directory, one store: SQLite, or with --store-engine postgresql a private PostgreSQL
server started by tests/e2e_pg/pg.py; a Cluster Service simulator with the instant profile):

 1. Through the ARM API (`hcprp frontend` + `hcprp backend`): a template subscription with one cluster and
    one node pool, and the "big" subscription with --big-clusters clusters of --big-node-pools node pools
    each (5,000 resources by default), every operation driven to Succeeded by the backend.
 2. Baseline, at that size (about 5,000 resources): GET latency, paged list latency (page of 100), the
    backend's start-up time and resident memory, one full backend pass (ReconcileOnce).
 3. With frontend and backend stopped, `scale_tool load` copies the template's documents (what the
    frontend and backend stored for them: subscription, resource, operation and billing documents) into
    --subscriptions new subscriptions of --clusters clusters with --node-pools node pools each, straight
    through the store API (99,990 resources by default).
 4. At 100,000 resources: the same figures as the baseline.
 5. The big subscription is set to Deleted (a subscription PUT with state Deleted, as ARM sends it) and
    the store is watched until none of its clusters and node pools is left.
 6. Propagation at that size (unless --skip-propagation): bench/propagation/run.py's staggered method
    (events mode) on a copy of this store (PostgreSQL: on this store), with --in-flight operations held in
    `installing`.

Every figure is printed beside its target and beside the baseline of step 2; with --baseline-hcprp the
list is also read through that binary's frontend on the same store, page by page in turn with this
build's (same answers required). Not part of ctest.

Usage: python3 bench/scale/run.py --hcprp build/release/hcprp --tool build/release/bench/scale/scale_tool
"""

import argparse
import concurrent.futures
import http.client
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e_pg"))
sys.dont_write_bytecode = True
from e2e import Arm, Proc, http_request, url_after  # noqa: E402

CLUSTER_TYPE = "microsoft.redhatopenshift/hcpopenshiftclusters"
NODEPOOL_TYPE = "microsoft.redhatopenshift/hcpopenshiftclusters/nodepools"
OPERATION_TYPE = "microsoft.redhatopenshift/hcpoperationsstatus"
TEMPLATE_SUB = "5ca1e000-ffff-4000-8000-000000000000"
BIG_SUB = "5ca1e000-eeee-4000-8000-000000000000"
TENANT = "5ca1e000-aaaa-4000-8000-000000000000"
CLIENT = "5ca1e000-bbbb-4000-8000-000000000000"
RG = "scale-rg"

TARGETS = {
    "backend_startup_s": 5.0,
    "backend_rss_mb": 500.0,
    "list_p99_ms": 20.0,
    "delete_s": 60.0,
    "propagation_p99_ms": 50.0,
}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class BenchError(Exception):
    pass


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def proc_status(pid, field):
    """A /proc/<pid>/status field in MB (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric(admin_url, name):
    r = http_request("GET", admin_url + "/metrics")
    for line in r.raw.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def same_page(a, a_endpoint, b, b_endpoint):
    """Two list answers are the same bytes but for the host:port of each frontend in nextLink."""
    def masked(raw, endpoint):
        return raw.replace(urllib.parse.urlsplit(endpoint).netloc.encode(), b"HOST")
    return masked(a, a_endpoint) == masked(b, b_endpoint)


class Getter:
    """GETs over one keep-alive connection; returns (status, seconds)."""

    def __init__(self, endpoint):
        u = urllib.parse.urlsplit(endpoint)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def get(self, path, headers):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                t0 = time.perf_counter()
                self.conn.request("GET", path, headers=headers)
                res = self.conn.getresponse()
                raw = res.read()
                took = time.perf_counter() - t0
                return res.status, raw, took
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise


class Bench:
    def __init__(self, args):
        self.args = args
        self.dir = args.workdir or tempfile.mkdtemp(prefix="hcprp-bench-scale-")
        os.makedirs(self.dir, exist_ok=True)
        self.db = os.path.join(self.dir, "hcprp.db")
        self.store = "sqlite://" + self.db
        self.pg = None
        if args.store_engine == "postgresql":
            from pg import PgServer  # tests/e2e_pg/pg.py: a private server as the postgres user
            self.pg = PgServer(database="hcprp")
            self.store = self.pg.url()
            log(f"PostgreSQL {self.pg.bin} on port {self.pg.port}, data in {self.pg.dir}")
        self.procs = {}
        self.results = {}

    # -- processes ---------------------------------------------------------------------------------
    def spawn(self, name, argv):
        p = Proc(name, argv, os.path.join(self.dir, f"{name}.log"))
        self.procs[name] = p
        return p

    def stop(self, name):
        p = self.procs.pop(name, None)
        if p:
            p.stop(timeout=30)

    def start_cs(self):
        cs = self.spawn("clusters-service", [self.args.hcprp, "clusters-service", "--listen", "127.0.0.1:0",
                                             "--data-dir", os.path.join(self.dir, "cs"), "--profile", "instant",
                                             "--provisioner", "timed", "--log-level", "warn",
                                             # plain HTTP on loopback, /control on the same listener
                                             "--insecure-http", "--control-listen", "off"])
        self.cs_url = cs.wait_line(url_after("listening on"))

    def start_frontend(self, name="frontend", hcprp=None):
        """Starts a frontend (of --hcprp, or of `hcprp`: the baseline binary); returns its endpoint."""
        fe = self.spawn(name, [hcprp or self.args.hcprp, "frontend", "--store", self.store, "--clusters-service",
                                     self.cs_url, "--listen", "127.0.0.1:0", "--log-level", "warn",
                                     "--data-dir", self.dir, "--insecure-http"])
        endpoint = fe.wait_line(url_after("listening on"))
        if name == "frontend":
            self.endpoint = endpoint
        return endpoint

    def start_backend(self):
        """Starts the backend; returns (seconds to 'running', seconds until it holds every shard and
        finished its first full resync)."""
        t0 = time.monotonic()
        be = self.spawn("backend", [self.args.hcprp, "backend", "--store", self.store, "--clusters-service",
                                    self.cs_url, "--log-level", "warn", "--owner", "scale",
                                    "--data-dir", self.dir])
        be.wait_line(lambda line: "backend running" in line, timeout=600)
        t_running = time.monotonic() - t0
        self.admin = be.wait_line(url_after("metrics:"), timeout=30).rsplit("/metrics", 1)[0]
        while True:
            shards = metric(self.admin, "hcprp_backend_shards_held")
            resyncs = metric(self.admin, "hcprp_backend_full_resyncs_total")
            if shards == 8 and resyncs and resyncs >= 1:
                break
            if time.monotonic() - t0 > 600:
                raise BenchError("backend not ready after 600 s")
            time.sleep(0.02)
        return t_running, time.monotonic() - t0

    def close(self):
        for name in list(self.procs):
            self.stop(name)
        if self.pg:
            self.pg.close()
        if self.args.keep or self.args.workdir:
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- ARM ---------------------------------------------------------------------------------------
    def arm(self, sub):
        return Arm(self.endpoint, subscription=sub, tenant=TENANT, client_id=CLIENT, resource_group=RG)

    def count(self, sql, *params):
        """A count over the store's documents table; `?` takes `params` in order (SQLite: pk as bytes,
        resource_type as text; PostgreSQL keeps both as bytea)."""
        if self.pg:
            for v in params:
                v = v.decode() if isinstance(v, bytes) else v
                lit = "'" + v.replace("'", "''") + "'"
                sql = sql.replace("?", f"convert_to({lit}, 'UTF8')", 1)
            sql = sql.replace("non_terminal=1", "non_terminal").replace("FROM documents", "FROM hcprp.documents")
            return int(self.pg.psql(sql).strip())
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, params).fetchone()[0]
        finally:
            con.close()

    def store_mb(self):
        if self.pg:
            return int(self.pg.psql("SELECT pg_database_size('hcprp')").strip()) / 1e6
        return sum(os.path.getsize(self.db + s) for s in ("", "-wal") if os.path.exists(self.db + s)) / 1e6

    def non_terminal(self):
        return self.count("SELECT count(*) FROM documents WHERE container='resources' AND non_terminal=1 "
                          "AND resource_type=?", OPERATION_TYPE)

    def resources_of(self, sub):
        return self.count("SELECT count(*) FROM documents WHERE container='resources' AND pk=? AND "
                          "resource_type IN (?, ?)", sub.encode(), CLUSTER_TYPE, NODEPOOL_TYPE)

    def wait_drained(self, timeout):
        deadline = time.monotonic() + timeout
        while self.non_terminal():
            if time.monotonic() > deadline:
                raise BenchError(f"{self.non_terminal()} operations still in flight after {timeout}s")
            time.sleep(0.2)

    def put_all(self, calls, threads=8):
        def one(c):
            arm, path, body = c
            r = arm.call("PUT", path, body, timeout=120)
            if r.status not in (200, 201):
                raise BenchError(f"PUT {path}: {r!r}")
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, calls))

    def create_through_api(self):
        a = self.args
        t = self.arm(TEMPLATE_SUB)
        t.register()
        self.put_all([(t, t.cluster_path("tmplcluster"), t.cluster_body("tmplcluster"))])
        self.wait_drained(60)
        self.put_all([(t, t.nodepool_path("tmplcluster", "tmplpool"), t.nodepool_body("tmplcluster"))])
        self.wait_drained(60)
        big = self.arm(BIG_SUB)
        big.register()
        t0 = time.monotonic()
        self.put_all([(big, big.cluster_path(f"c{i:04d}"), big.cluster_body(f"c{i:04d}"))
                      for i in range(a.big_clusters)])
        self.wait_drained(600)
        self.put_all([(big, big.nodepool_path(f"c{i:04d}", f"np{k}"), big.nodepool_body(f"c{i:04d}"))
                      for i in range(a.big_clusters) for k in range(a.big_node_pools)])
        self.wait_drained(600)
        n = a.big_clusters * (1 + a.big_node_pools)
        took = time.monotonic() - t0
        log(f"through the API: {n} resources in subscription {BIG_SUB} created and Succeeded in {took:.1f}s "
            f"({n / took:.0f}/s)")
        self.results["api_create"] = {"resources": n, "seconds": took}

    # -- measurements ------------------------------------------------------------------------------
    def get_latency(self, paths):
        g = Getter(self.endpoint)
        arm = self.arm(TEMPLATE_SUB)
        times = []
        for p in paths:
            status, raw, took = g.get(p + "?api-version=2026-10-01", arm.headers())
            if status != 200:
                raise BenchError(f"GET {p}: {status} {raw[:300]!r}")
            times.append(took)
        return {"n": len(times), "p50_ms": percentile(times, 50) * 1000, "p99_ms": percentile(times, 99) * 1000}

    def list_latency(self, rounds, baseline_endpoint=None):
        """Pages of 100 clusters of the big subscription, following nextLink. With `baseline_endpoint`
        (a frontend of --baseline-hcprp on the same store) every page is also read there, alternately,
        and the two answers must be the same bytes (but for the host in nextLink)."""
        g = Getter(self.endpoint)
        gb = Getter(baseline_endpoint) if baseline_endpoint else None
        arm = self.arm(BIG_SUB)
        times, base_times, items, size = [], [], 0, 0
        cold = 0  # pages of the first round: rendered, not yet in the frontend's render cache
        first = f"/subscriptions/{BIG_SUB}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters" \
                "?api-version=2026-10-01&$top=100"
        for k in range(rounds):
            path = first
            while path:
                order = [(g, times), (gb, base_times)] if gb else [(g, times)]
                if k % 2:
                    order.reverse()
                bodies = {}
                for getter, into in order:
                    status, raw, took = getter.get(path, arm.headers())
                    if status != 200:
                        raise BenchError(f"list {path}: {status} {raw[:300]!r}")
                    into.append(took)
                    bodies[id(into)] = raw
                    if into is times:
                        size = max(size, len(raw))
                if gb and not same_page(bodies[id(times)], self.endpoint, bodies[id(base_times)], baseline_endpoint):
                    raise BenchError(f"list {path}: the baseline binary answered differently")
                body = json.loads(bodies[id(times)])
                items += len(body["value"])
                link = body.get("nextLink")
                if k == 0:
                    cold += 1
                path = None
                if link:
                    u = urllib.parse.urlsplit(link)
                    path = u.path + "?" + u.query
        r = {"pages": len(times), "items": items, "page_bytes": size, "p50_ms": percentile(times, 50) * 1000,
             "p99_ms": percentile(times, 99) * 1000, "cold_pages": cold,
             "cold_p50_ms": percentile(times[:cold], 50) * 1000, "cold_max_ms": max(times[:cold]) * 1000,
             "slowest_ms": [round(t * 1000, 1) for t in sorted(times)[-5:]]}
        if rounds > 1:
            r["warm_p99_ms"] = percentile(times[cold:], 99) * 1000
        if gb:
            r["baseline_p50_ms"] = percentile(base_times, 50) * 1000
            r["baseline_p99_ms"] = percentile(base_times, 99) * 1000
            r["baseline_cold_p50_ms"] = percentile(base_times[:cold], 50) * 1000
            r["baseline_cold_max_ms"] = max(base_times[:cold]) * 1000
            if rounds > 1:
                r["baseline_warm_p99_ms"] = percentile(base_times[cold:], 99) * 1000
        return r

    def measure_list(self, label):
        """List latency of this build (and of --baseline-hcprp on the same store, alternately), with
        `perf record -g` of this build's frontend when --perf-list is given."""
        base = self.start_frontend("baseline-frontend", self.args.baseline_hcprp) if self.args.baseline_hcprp \
            else None
        perf = None
        if self.args.perf_list:
            perf = subprocess.Popen(["perf", "record", "-F", "999", "--call-graph", self.args.perf_call_graph,
                                     "-o", self.args.perf_list, "-p",
                                     str(self.procs["frontend"].p.pid)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(1)
        try:
            r = self.list_latency(self.args.list_rounds, base)
        finally:
            if perf:
                perf.send_signal(2)
                perf.wait(timeout=60)
            self.stop("baseline-frontend")
        log(f"[{label}] list: {r}")
        return r

    def resync(self):
        out = subprocess.run([self.args.tool, "resync", "--store", self.store, "--clusters-service", self.cs_url,
                              "--rounds", "3"], capture_output=True, text=True, timeout=1200)
        if out.returncode != 0:
            raise BenchError(f"scale_tool resync: {out.stderr[-2000:]}")
        passes = json.loads(out.stdout)["passes"]
        return {"seconds": min(p["seconds"] for p in passes), "cpu_seconds": min(p["cpu_seconds"] for p in passes),
                "first_seconds": passes[0]["seconds"], "first_cpu_seconds": passes[0]["cpu_seconds"],
                "in_flight": passes[-1]["in_flight"], "checks": [p["checks"] for p in passes]}

    def sample_paths(self, loaded):
        rnd = random.Random(17)
        paths = []
        for _ in range(self.args.gets):
            if loaded:
                sub = f"5ca1e000-0000-4000-8000-{rnd.randrange(self.args.subscriptions):012d}"
                cluster, pools = f"c{rnd.randrange(self.args.clusters)}", self.args.node_pools
            else:
                sub = BIG_SUB
                cluster, pools = f"c{rnd.randrange(self.args.big_clusters):04d}", self.args.big_node_pools
            base = f"/subscriptions/{sub}/resourceGroups/{RG}/providers/Microsoft.RedHatOpenShift/" \
                   f"hcpOpenShiftClusters/{cluster}"
            k = rnd.randrange(pools + 1)
            paths.append(base if k == pools else f"{base}/nodePools/np{k}")
        return paths

    def measure(self, label, loaded):
        """Backend pass, backend start-up and memory, GET and list latency at the current size."""
        resources = self.count("SELECT count(*) FROM documents WHERE container='resources' AND resource_type IN "
                               "(?, ?)", CLUSTER_TYPE, NODEPOOL_TYPE)
        documents = self.count("SELECT count(*) FROM documents")
        size_mb = self.store_mb()
        log(f"[{label}] {resources} resources, {documents} documents, store {size_mb:.0f} MB")
        r = {"resources": resources, "documents": documents, "store_mb": size_mb}
        self.stop("frontend")
        self.stop("backend")
        r["resync"] = self.resync()
        log(f"[{label}] full backend pass: {r['resync']}")
        cpu0 = None
        t_running, t_ready = self.start_backend()
        be = self.procs["backend"]
        r["backend_running_s"], r["backend_startup_s"] = t_running, t_ready
        r["backend_rss_start_mb"] = proc_status(be.p.pid, "VmRSS")
        # The console's model of the store loads on its own thread after start-up: wait until the
        # backend is idle (under 5% of a core over 0.5 s) so that the reads below do not share the
        # cores with it, and report how long that took.
        t0, prev = time.monotonic(), cpu_seconds(be.p.pid)
        while time.monotonic() - t0 < 120:
            time.sleep(0.5)
            now = cpu_seconds(be.p.pid)
            if now - prev < 0.025:
                break
            prev = now
        r["backend_idle_after_s"] = r["backend_startup_s"] + time.monotonic() - t0
        r["backend_rss_loaded_mb"] = proc_status(be.p.pid, "VmRSS")
        cpu0 = cpu_seconds(be.p.pid)
        self.start_frontend()
        fe = self.procs["frontend"]
        r["get"] = self.get_latency(self.sample_paths(loaded))
        r["list"] = self.measure_list(label)
        time.sleep(self.args.settle)
        r["backend_rss_mb"] = proc_status(be.p.pid, "VmRSS")
        r["backend_hwm_mb"] = proc_status(be.p.pid, "VmHWM")
        r["backend_cpu_idle_s"] = cpu_seconds(be.p.pid) - cpu0
        r["frontend_rss_mb"] = proc_status(fe.p.pid, "VmRSS")
        log(f"[{label}] {json.dumps(r)}")
        self.results[label] = r
        return r

    def load(self):
        t0 = time.monotonic()
        out = subprocess.run([self.args.tool, "load", "--store", self.store, "--template-subscription", TEMPLATE_SUB,
                              "--template-cluster", "tmplcluster", "--template-node-pool", "tmplpool",
                              "--subscriptions", str(self.args.subscriptions), "--clusters", str(self.args.clusters),
                              "--node-pools", str(self.args.node_pools)],
                             capture_output=True, text=True, timeout=7200)
        if out.returncode != 0:
            raise BenchError(f"scale_tool load: {out.stderr[-2000:]}")
        r = json.loads(out.stdout)
        log(f"loaded through the store API in {time.monotonic() - t0:.1f}s: {r}")
        self.results["load"] = r

    def delete_subscription(self):
        before = self.resources_of(BIG_SUB)
        big = self.arm(BIG_SUB)
        be = self.procs["backend"]
        cpu0 = cpu_seconds(be.p.pid)
        perf = None
        if self.args.perf_delete:
            # perf record of the frontend, which creates the Delete operations in the PUT itself.
            perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-o", self.args.perf_delete, "-p",
                                     str(self.procs["frontend"].p.pid)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(1)
        t0 = time.monotonic()
        # Arm.register's PUT with a timeout long enough for the frontend, which creates every Delete
        # operation inside the request (minutes on PostgreSQL).
        body = {"state": "Deleted", "registrationDate": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
                "properties": {"tenantId": big.tenant, "registeredFeatures": []}}
        r = big.call("PUT", f"/subscriptions/{BIG_SUB}", body, api_version="2.0", timeout=self.args.delete_timeout)
        if r.status not in (200, 201):
            raise BenchError(f"subscription PUT Deleted: {r!r}")
        if perf:
            perf.send_signal(2)
            perf.wait(timeout=60)
        t_put = time.monotonic() - t0
        left = before
        while left:
            if time.monotonic() - t0 > self.args.delete_timeout:
                raise BenchError(f"{left} of {before} resources left after {self.args.delete_timeout}s")
            time.sleep(0.1)
            left = self.resources_of(BIG_SUB)
        took = time.monotonic() - t0
        r = {"resources": before, "seconds": took, "put_seconds": t_put,
             "backend_cpu_s": cpu_seconds(be.p.pid) - cpu0}
        log(f"subscription deletion: {r}")
        self.results["delete"] = r

    def resync_in_flight(self):
        """A full backend pass with --resync-in-flight creates waiting in the Cluster Service."""
        n = self.args.resync_in_flight
        r = http_request("PUT", f"{self.cs_url}/control/timing", {"profile": "demo", "time_scale": 1000})
        if r.status != 200:
            raise BenchError(f"PUT /control/timing: {r!r}")
        subs = [self.arm(f"5ca1e000-dddd-4000-8000-{i:012d}") for i in range(max(1, n // 100))]
        for a in subs:
            a.register()
        self.put_all([(subs[i % len(subs)], subs[i % len(subs)].cluster_path(f"w{i:05d}"),
                       subs[i % len(subs)].cluster_body(f"w{i:05d}")) for i in range(n)])
        self.stop("backend")
        r = self.resync()
        r["operations_in_flight"] = self.non_terminal()
        log(f"full backend pass with {r['operations_in_flight']} operations in flight: {r}")
        self.results["resync_in_flight"] = r

    def propagation(self):
        spec = importlib.util.spec_from_file_location("propagation_run",
                                                      os.path.join(HERE, "..", "propagation", "run.py"))
        prop = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(prop)
        self.stop("frontend")
        self.stop("backend")
        self.stop("clusters-service")
        if self.pg:
            # PostgreSQL: on this store itself (the SQLite store is copied so that the run keeps it).
            store = ["--store-url", self.store]
        else:
            seed = os.path.join(self.dir, "seed.db")
            con = sqlite3.connect(self.db)
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.execute(f"VACUUM INTO '{seed}'")
            con.close()
            store = ["--seed-store", seed]
        pargs = prop.main_parser().parse_args(["--hcprp", self.args.hcprp, "--no-burst", *store,
                                               "--create-rate", str(self.args.create_rate)])
        row, _ = prop.measure_staggered(pargs, False, self.args.in_flight)
        self.results["propagation"] = row
        if not self.pg:
            os.unlink(seed)

    # -- report ------------------------------------------------------------------------------------
    def report(self):
        b = self.results.get("baseline", {})
        s = self.results.get("scale", {})
        d = self.results.get("delete", {})
        p = self.results.get("propagation")

        def row(what, base, at, target, unit, fmt="{:.2f}"):
            tv = "" if target is None else f"< {fmt.format(target)} {unit}"
            ok = "" if target is None or at != at else ("met" if at < target else "MISSED")
            bs = "" if base is None else f"{fmt.format(base)} {unit}"
            print(f"| {what} | {bs} | {fmt.format(at)} {unit} | {tv} | {ok} |")

        lo = self.results.get("list_only")
        if lo:
            print()
            print(f"| figure | --baseline-hcprp, same store | this build | target | |")
            print("|---|---:|---:|---:|---|")
            row(f"list p50 (page of 100, {lo['page_bytes'] / 1000:.0f} KB)", lo.get("baseline_p50_ms"),
                lo["p50_ms"], None, "ms")
            row("list p99 (page of 100)", lo.get("baseline_p99_ms"), lo["p99_ms"], TARGETS["list_p99_ms"], "ms")
            row("list p50, first round (render cache cold)", lo.get("baseline_cold_p50_ms"), lo["cold_p50_ms"],
                None, "ms")
            row("list max, first round (render cache cold)", lo.get("baseline_cold_max_ms"), lo["cold_max_ms"],
                None, "ms")
            if "warm_p99_ms" in lo:
                row("list p99 after the first round", lo.get("baseline_warm_p99_ms"), lo["warm_p99_ms"],
                    TARGETS["list_p99_ms"], "ms")
            print()
            print(json.dumps(self.results, indent=1))
            return
        print()
        print(f"| figure | baseline ({b.get('resources', 0):,} resources) | at {s.get('resources', 0):,} resources "
              f"| target | |")
        print("|---|---:|---:|---:|---|")
        row("backend start-up (holds every shard, first resync done)", b.get("backend_startup_s"),
            s.get("backend_startup_s", float("nan")), TARGETS["backend_startup_s"], "s")
        row("backend idle again (console model loaded)", b.get("backend_idle_after_s"),
            s.get("backend_idle_after_s", float("nan")), None, "s")
        row("backend resident memory (VmRSS after the reads)", b.get("backend_rss_mb"),
            s.get("backend_rss_mb", float("nan")), TARGETS["backend_rss_mb"], "MB", "{:.0f}")
        row("backend peak memory (VmHWM)", b.get("backend_hwm_mb"), s.get("backend_hwm_mb", float("nan")), None,
            "MB", "{:.0f}")
        row("frontend resident memory", b.get("frontend_rss_mb"), s.get("frontend_rss_mb", float("nan")), None,
            "MB", "{:.0f}")
        row("GET p50", b.get("get", {}).get("p50_ms"), s.get("get", {}).get("p50_ms", float("nan")), None, "ms")
        row("GET p99", b.get("get", {}).get("p99_ms"), s.get("get", {}).get("p99_ms", float("nan")), None, "ms")
        row("list p50 (page of 100)", b.get("list", {}).get("p50_ms"), s.get("list", {}).get("p50_ms", float("nan")),
            None, "ms")
        row("list p99 (page of 100)", b.get("list", {}).get("p99_ms"), s.get("list", {}).get("p99_ms", float("nan")),
            TARGETS["list_p99_ms"], "ms")
        if "baseline_p99_ms" in s.get("list", {}):
            bl, sl = b.get("list", {}), s["list"]
            row("list p50, --baseline-hcprp's frontend on the same store", bl.get("baseline_p50_ms"),
                sl["baseline_p50_ms"], None, "ms")
            row("list p99, --baseline-hcprp's frontend on the same store", bl.get("baseline_p99_ms"),
                sl["baseline_p99_ms"], TARGETS["list_p99_ms"], "ms")
        for key, what in (("cold_p50_ms", "list p50, first round (render cache cold)"),
                          ("cold_max_ms", "list max, first round (render cache cold)"),
                          ("warm_p99_ms", "list p99 after the first round")):
            if key in s.get("list", {}):
                row(what, b.get("list", {}).get(key), s["list"][key], None, "ms")
            if "baseline_" + key in s.get("list", {}):
                row(what + ", --baseline-hcprp", b.get("list", {}).get("baseline_" + key), s["list"]["baseline_" + key],
                    None, "ms")
        row("first full backend pass (leases, subscriptions, index), wall", b.get("resync", {}).get("first_seconds"),
            s.get("resync", {}).get("first_seconds", float("nan")), None, "s", "{:.3f}")
        row("first full backend pass, CPU", b.get("resync", {}).get("first_cpu_seconds"),
            s.get("resync", {}).get("first_cpu_seconds", float("nan")), None, "s", "{:.3f}")
        row("full backend pass (ReconcileOnce), wall", b.get("resync", {}).get("seconds"),
            s.get("resync", {}).get("seconds", float("nan")), None, "s", "{:.3f}")
        row("full backend pass (ReconcileOnce), CPU", b.get("resync", {}).get("cpu_seconds"),
            s.get("resync", {}).get("cpu_seconds", float("nan")), None, "s", "{:.3f}")
        row("store size", b.get("store_mb"), s.get("store_mb", float("nan")), None, "MB", "{:.0f}")
        ri = self.results.get("resync_in_flight")
        if ri:
            row(f"first full backend pass, {ri['operations_in_flight']:,} operations in flight, wall", None,
                ri["first_seconds"], None, "s", "{:.3f}")
            row(f"first full backend pass, {ri['operations_in_flight']:,} operations in flight, CPU", None,
                ri["first_cpu_seconds"], None, "s", "{:.3f}")
            row(f"full backend pass, {ri['operations_in_flight']:,} operations in flight, wall", None, ri["seconds"],
                None, "s", "{:.3f}")
            row(f"full backend pass, {ri['operations_in_flight']:,} operations in flight, CPU", None,
                ri["cpu_seconds"], None, "s", "{:.3f}")
        if d:
            row(f"subscription of {d['resources']:,} resources set to Deleted, until all are gone", None,
                d["seconds"], TARGETS["delete_s"], "s", "{:.1f}")
        if p:
            row(f"propagation p99, change to ARM status seen ({p['n']:,} in flight)", None, p["seen_p99"] * 1000,
                TARGETS["propagation_p99_ms"], "ms", "{:.0f}")
            row(f"propagation p99, change to committed ({p['n']:,} in flight)", None, p["commit_p99"] * 1000,
                TARGETS["propagation_p99_ms"], "ms", "{:.0f}")
        print()
        print(json.dumps(self.results, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hcprp", required=True)
    ap.add_argument("--tool", required=True, help="path to bench/scale/scale_tool")
    ap.add_argument("--subscriptions", type=int, default=9999, help="subscriptions loaded through the store")
    ap.add_argument("--clusters", type=int, default=2, help="clusters per loaded subscription")
    ap.add_argument("--node-pools", type=int, default=4, help="node pools per loaded cluster")
    ap.add_argument("--big-clusters", type=int, default=1000, help="clusters of the subscription that is deleted")
    ap.add_argument("--big-node-pools", type=int, default=4, help="node pools per cluster of that subscription")
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--list-rounds", type=int, default=20)
    ap.add_argument("--settle", type=float, default=2, help="seconds before reading the backend's memory")
    ap.add_argument("--delete-timeout", type=float, default=900)
    ap.add_argument("--in-flight", type=int, default=10000, help="propagation: operations in flight")
    ap.add_argument("--create-rate", type=float, default=45, help="propagation: expected ARM creates per second")
    ap.add_argument("--resync-in-flight", type=int, default=2000,
                    help="operations held in flight for the full backend pass (0: skip)")
    ap.add_argument("--skip-propagation", action="store_true")
    ap.add_argument("--store-engine", choices=["sqlite", "postgresql"], default="sqlite",
                    help="postgresql: a private server (Debian's postgresql, run as the postgres user)")
    ap.add_argument("--skip-delete", action="store_true", help="keep the big subscription (for --only list)")
    ap.add_argument("--only", choices=["list"], help="list: only the list latency, on the store of --workdir")
    ap.add_argument("--baseline-hcprp", help="another build's hcprp (e.g. main's): its frontend lists the same "
                    "store, page by page alternately with this build's")
    ap.add_argument("--perf-list", help="perf record the frontend during the list into this file")
    ap.add_argument("--perf-call-graph", default="dwarf", help="perf record --call-graph for --perf-list")
    ap.add_argument("--perf-delete", help="perf record the frontend during the subscription PUT into this file")
    ap.add_argument("--workdir", help="use (and keep) this directory")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bench = Bench(args)
    if args.only == "list":
        # The list alone, on the store a previous run kept (--workdir ... --skip-delete).
        if not args.workdir or not os.path.exists(bench.db):
            raise SystemExit("--only list needs --workdir holding a store of a run with --skip-delete")
        try:
            bench.start_cs()
            bench.start_frontend()
            bench.results["list_only"] = bench.measure_list("list")
        finally:
            bench.close()
            bench.report()
        return
    try:
        bench.start_cs()
        bench.start_frontend()
        bench.start_backend()
        bench.create_through_api()
        bench.measure("baseline", loaded=False)
        bench.stop("frontend")
        bench.stop("backend")
        bench.load()
        bench.measure("scale", loaded=True)
        if not args.skip_delete:
            bench.delete_subscription()
        if not args.skip_propagation:
            bench.propagation()
        if args.resync_in_flight:
            for name, start in (("clusters-service", bench.start_cs), ("frontend", bench.start_frontend),
                                ("backend", bench.start_backend)):
                if name not in bench.procs:
                    start()
            bench.resync_in_flight()
    finally:
        bench.close()
        bench.report()


if __name__ == "__main__":
    main()
