#!/usr/bin/env python3
"""Propagation benchmark: how long after a Cluster Service state change the ARM status endpoint shows it.

For each mode (events: the backend follows the Cluster Service event stream; polling: the backend is
kept off the event stream and polls in-flight operations every 10 s, as the seeds' design does) and
each N (1,000 and 10,000 operations in flight):

 1. start `hcprp clusters-service` (demo profile, time scale 1000: every object waits in `validating`),
    `hcprp frontend` and `hcprp backend` on one SQLite store; in polling mode the backend reaches the
    Cluster Service through a small proxy that answers 503 to the event stream (hcprp has no flag that
    turns the event stream off; the backend then falls back to polling, as it would for a Cluster
    Service without one);
 2. create N clusters through ARM (PUT), spread over N/100 subscriptions;
 3. move them all to `installing` in step (PUT /control/timing demo, scale 2), then freeze them there
    (scale 1000) and wait until every ARM operation shows Provisioning;
 4. flip them all to `ready` at one instant (PUT /control/timing instant).

The Cluster Service change time of each cluster is when this program receives its `ready` event from
the simulator's event stream (long-poll, so within a few ms of the commit). The ARM side is measured two
ways: the operation's endTime (the backend's commit that the status endpoint renders; all N operations),
and, for a sample, the instant a client polling the status endpoint in a loop first sees Succeeded.

Staggered (the headline figure, run first on the same stack): the burst above measures the backend's
throughput (one durable SQLite commit per transition), not how fast it reacts to one change. The
simulator has no per-object release and PUT /control/timing re-plans every object from "now", so the
pace comes from creation times instead: under one fixed demo timing (scale S, every cluster lives 8 S
from its creation) this program creates the stream clusters at --rate for --duration seconds, then the
N background clusters as fast as it can. Every cluster goes ready 8 S after its creation, so the stream
goes ready one by one at the pace it was created while all N background clusters sit in installing
(checked; S is sized from --create-rate). Once the stream is out, the background is frozen (scale 1000)
and the burst above runs on it. Per changed cluster: commit = the operation's endTime minus the arrival
of its ready event; seen = for a sample, each GET every --poll-interval from 1 s before its expected
change, the first one that shows Succeeded, minus the same arrival.

Then the backend's CPU use with 10,000 registered subscriptions and nothing in flight
(/proc/<pid>/stat utime+stime over 30 s).

Usage: python3 bench/propagation/run.py --hcprp build/hcprp [--quick]
"""

import argparse
import concurrent.futures
import datetime
import http.client
import http.server
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.dont_write_bytecode = True
import e2e  # noqa: E402  (process and HTTP helpers shared with the end-to-end tests)
from e2e import Arm, CsClient, CS_PREFIX, Proc, http_request, url_after  # noqa: E402


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class BenchError(Exception):
    pass


def wait_for(fn, timeout, interval=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def parse_time(s):
    # RFC 3339 with up to nanoseconds and a Z.
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".")
        s = f"{head}.{frac[:6].ljust(6, '0')}"
        fmt = "%Y-%m-%dT%H:%M:%S.%f"
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
    return datetime.datetime.strptime(s, fmt).replace(tzinfo=datetime.timezone.utc).timestamp()


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, math.ceil(p / 100.0 * len(v)) - 1))
    return v[k]


# ------------------------------------------------------------------------------------------------
# A proxy to the Cluster Service that hides the event stream (polling mode). Run as a child process.

def run_proxy(target, ready_file):
    u = urllib.parse.urlsplit(target)
    local = threading.local()

    class Handler(http.server.BaseHTTPRequestHandler):
        # One request per connection: simple and robust; the backend's client reconnects as needed.
        protocol_version = "HTTP/1.0"

        def _forward(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            if self.path.startswith(CS_PREFIX + "/events"):
                payload = b'{"kind":"Error","id":"503","reason":"no event stream here"}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(payload)
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            for attempt in range(2):
                conn = getattr(local, "conn", None)
                if conn is None:
                    conn = local.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    res = conn.getresponse()
                    data = res.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    local.conn = None
                    if attempt == 1:
                        self.send_error(502)
                        return
            self.send_response(res.status)
            for k, v in res.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _forward

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(ready_file + ".tmp", "w") as f:
        f.write(f"http://127.0.0.1:{server.server_address[1]}")
    os.rename(ready_file + ".tmp", ready_file)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    server.serve_forever()


# ------------------------------------------------------------------------------------------------

class Stack:
    """clusters-service + frontend + backend (+ proxy) in a temporary directory."""

    def __init__(self, hcprp, polling, keep=False, seed_store=None, store_url=None):
        self.hcprp = hcprp
        self.dir = tempfile.mkdtemp(prefix="hcprp-bench-propagation-")
        self.procs = []
        self.keep = keep
        self.store = store_url or "sqlite://" + os.path.join(self.dir, "hcprp.db")
        if seed_store:
            # A store that already holds documents (bench/scale loads 100,000 resources into one).
            shutil.copyfile(seed_store, os.path.join(self.dir, "hcprp.db"))
        cs = self.spawn("clusters-service", [hcprp, "clusters-service", "--listen", "127.0.0.1:0", "--data-dir",
                                             os.path.join(self.dir, "cs"), "--profile", "demo",
                                             "--time-scale", "1000", "--provisioner", "timed",
                                             "--log-level", "warn",
                                             # plain HTTP on loopback, /control on the same listener
                                             "--insecure-http", "--control-listen", "off"])
        self.cs_url = cs.wait_line(url_after("listening on"))
        backend_cs = self.cs_url
        if polling:
            ready = os.path.join(self.dir, "proxy.url")
            self.spawn("proxy", [sys.executable, os.path.abspath(__file__), "--proxy-to", self.cs_url,
                                 "--proxy-ready-file", ready])
            wait_for(lambda: os.path.exists(ready), 20, what="the proxy")
            backend_cs = open(ready).read().strip()
        fe = self.spawn("frontend", [hcprp, "frontend", "--store", self.store, "--clusters-service", self.cs_url,
                                     "--listen", "127.0.0.1:0", "--log-level", "warn", "--threads", "8",
                                     "--insecure-http"])
        self.endpoint = fe.wait_line(url_after("listening on"))
        self.backend = self.spawn("backend", [hcprp, "backend", "--store", self.store, "--clusters-service",
                                              backend_cs, "--log-level", "warn"])
        self.backend.wait_line(lambda line: "backend running" in line)

    def spawn(self, name, argv):
        p = Proc(name, argv, os.path.join(self.dir, f"{name}.log"))
        self.procs.append(p)
        return p

    def close(self):
        for p in reversed(self.procs):
            p.stop()
        if self.keep:
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class EventWatcher(threading.Thread):
    """Follows the simulator's event stream; records when each cluster's events arrive."""

    def __init__(self, cs_url):
        super().__init__(daemon=True)
        u = urllib.parse.urlsplit(cs_url)
        self.host, self.port = u.hostname, u.port
        self.lock = threading.Lock()
        self.state = {}        # href -> last state
        self.ready_at = {}     # href -> time.time() the ready event arrived
        self.sim_ready_at = {} # href -> the simulator's status.last_transition_timestamp of that event
        self.key = {}          # href -> (subscription lower, cluster name lower)
        self.stop = False
        self.error = None
        r = http_request("GET", f"{cs_url}{CS_PREFIX}/events?after=latest")
        self.after = r.body["last_sequence"]

    def run(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=90)
        try:
            while not self.stop:
                conn.request("GET", f"{CS_PREFIX}/events?after={self.after}&timeout=1000&limit=5000")
                res = conn.getresponse()
                raw = res.read()
                now = time.time()
                if res.status != 200:
                    raise BenchError(f"event stream answered {res.status}: {raw[:300]!r}")
                page = json.loads(raw)
                with self.lock:
                    for item in page.get("items", []):
                        if item.get("kind") != "Cluster":
                            continue
                        href = item["href"]
                        self.state[href] = item["state"]
                        obj = item.get("object") or {}
                        if href not in self.key and obj:
                            self.key[href] = (obj.get("azure", {}).get("subscription_id", "").lower(),
                                              obj.get("name", "").lower())
                        if item["state"] == "ready" and href not in self.ready_at:
                            self.ready_at[href] = now
                            ts = (obj.get("status") or {}).get("last_transition_timestamp")
                            if ts:
                                self.sim_ready_at[href] = parse_time(ts)
                self.after = max(self.after, page.get("last_sequence", self.after))
        except Exception as e:  # reported by the main thread
            self.error = e

    def count(self, state):
        with self.lock:
            return sum(1 for s in self.state.values() if s == state)


def set_timing(cs_url, profile, scale):
    r = http_request("PUT", f"{cs_url}/control/timing", {"profile": profile, "time_scale": scale})
    if r.status != 200:
        raise BenchError(f"PUT /control/timing answered {r!r}")


def get_statuses(arms_by_url, urls, threads=16):
    """GETs each status URL once; returns {url: body}."""
    def one(url):
        r = arms_by_url[url].call("GET", url, timeout=60)
        return url, (r.body if r.status == 200 else {"status": f"HTTP {r.status}"})
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        return dict(pool.map(one, urls))


def measure_propagation(args, polling, n):
    mode = "polling (10 s)" if polling else "event stream"
    log(f"--- {mode}, {n} operations in flight")
    stack = Stack(args.hcprp, polling, args.keep)
    try:
        subs = [Arm(stack.endpoint, resource_group="bench-rg") for _ in range(max(1, n // 100))]
        for a in subs:
            a.register()
        watcher = EventWatcher(stack.cs_url)
        watcher.start()

        jobs = [(subs[i % len(subs)], f"c{i:05d}") for i in range(n)]
        by_key = {}   # (sub, name) -> status URL
        arm_of = {}   # status URL -> Arm

        def create(job):
            arm, name = job
            r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name), timeout=120)
            if r.status != 201:
                raise BenchError(f"create {name}: {r!r}")
            return arm, name, r.header("Azure-AsyncOperation")

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            for arm, name, url in pool.map(create, jobs):
                by_key[(arm.subscription.lower(), name.lower())] = url
                arm_of[url] = arm
        log(f"created {n} clusters in {time.monotonic() - t0:.1f}s ({n / (time.monotonic() - t0):.0f}/s)")

        # All to installing, in step; then hold them there.
        wait_for(lambda: watcher.count("validating") >= n or watcher.error, 120, what="validating events")
        # demo steps: validating 1, pending 1, installing 6 (times the scale). The simulator needs time to
        # move thousands of objects, so the scale grows with N to keep every object in installing
        # (entered at 2x scale) well before the first would leave it (8x scale).
        scale = max(2.0, n / 500.0)
        set_timing(stack.cs_url, "demo", scale)
        wait_for(lambda: watcher.count("installing") >= n or watcher.count("ready") or watcher.error,
                 60 + 10 * scale, interval=0.05, what="every cluster installing")
        set_timing(stack.cs_url, "demo", 1000)
        if watcher.error:
            raise BenchError(f"event watcher: {watcher.error}")
        if watcher.count("ready"):
            raise BenchError("some clusters went ready before the flip; the hold was too short")
        log(f"{n} clusters installing; waiting until ARM shows Provisioning for all")
        return run_burst(args, stack, watcher, arm_of, by_key, list(arm_of), mode, n, ready_before=0)
    finally:
        stack.close()


def run_burst(args, stack, watcher, arm_of, by_key, urls, mode, n, ready_before):
    """Burst throughput: every operation in `urls` is held in installing; flips them all to ready at once.
    `ready_before`: how many clusters were already ready in the simulator (not part of the burst)."""

    def all_provisioning():
        st = get_statuses(arm_of, urls)
        left = sum(1 for b in st.values() if b.get("status") != "Provisioning")
        return left == 0
    t_prov = time.monotonic()
    wait_for(all_provisioning, 300, interval=1, what="every operation Provisioning")
    log(f"all Provisioning after {time.monotonic() - t_prov:.1f}s")

    # A sample polled live, round robin, by a few threads.
    sample = random.Random(7).sample(urls, min(args.sample, len(urls)))
    first_seen = {}
    seen_lock = threading.Lock()
    stop = threading.Event()
    rounds = []

    def poller(part):
        while not stop.is_set():
            start = time.monotonic()
            pending = [u for u in part if u not in first_seen]
            if not pending:
                return
            for u in pending:
                r = arm_of[u].call("GET", u, timeout=60)
                if r.status == 200 and r.body.get("status") == "Succeeded":
                    with seen_lock:
                        first_seen.setdefault(u, time.time())
            rounds.append(time.monotonic() - start)

    parts = [sample[i::4] for i in range(4)]
    threads = [threading.Thread(target=poller, args=(p,), daemon=True) for p in parts]
    for t in threads:
        t.start()
    time.sleep(0.5)

    flip = time.time()
    set_timing(stack.cs_url, "instant", 1)
    wait_for(lambda: len(first_seen) >= len(sample) or watcher.error, 600, interval=0.2,
             what="the sample to show Succeeded")
    stop.set()
    for t in threads:
        t.join(timeout=30)
    cs_done = wait_for(lambda: watcher.count("ready") >= ready_before + n and max(watcher.ready_at.values()), 600,
                       what="every ready event")

    def all_succeeded():
        st = get_statuses(arm_of, urls)
        return st if all(b.get("status") == "Succeeded" for b in st.values()) else None
    final = wait_for(all_succeeded, 600, interval=1, what="every operation Succeeded")
    watcher.stop = True

    url_ready = {}
    url_set = set(urls)
    for href, key in watcher.key.items():
        url = by_key.get(key)
        if url in url_set and href in watcher.ready_at:
            url_ready[url] = watcher.ready_at[href]
    if len(url_ready) != n:
        raise BenchError(f"matched {len(url_ready)} ready events to {n} operations")
    commit = [parse_time(final[u]["endTime"]) - url_ready[u] for u in urls]
    seen = [first_seen[u] - url_ready[u] for u in sample]
    last_end = max(parse_time(b["endTime"]) for b in final.values())
    row = {"kind": "burst", "mode": mode, "n": n, "flip_spread": cs_done - flip,
           "commit_p50": percentile(commit, 50), "commit_p99": percentile(commit, 99),
           "commit_max": max(commit), "seen_p50": percentile(seen, 50), "seen_p99": percentile(seen, 99),
           "poll_round": percentile(rounds, 50) if rounds else float("nan"),
           "all_done": last_end - flip, "sample": len(sample)}
    log(f"result: {json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()})}")
    return row


class KeepAliveGetter:
    """GETs status URLs of one endpoint over one persistent connection (for polling every few ms)."""

    def __init__(self, endpoint):
        u = urllib.parse.urlsplit(endpoint)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def get(self, arm, url):
        u = urllib.parse.urlsplit(url)
        path = u.path + ("?" + u.query if u.query else "")
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.conn.request("GET", path, headers=arm.headers())
                res = self.conn.getresponse()
                raw = res.read()
                if res.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return res.status, (json.loads(raw) if res.status == 200 else None)
            except (http.client.HTTPException, OSError):
                if self.conn:
                    self.conn.close()
                self.conn = None
                if attempt == 1:
                    raise


def measure_staggered(args, polling, n):
    """N operations held in installing while a steady stream of other clusters goes ready (see README)."""
    mode = "polling (10 s)" if polling else "event stream"
    m = max(1, round(args.rate * args.duration))
    gap = args.gap
    # demo profile: validating 1, pending 1, installing 6 units of `scale` seconds. Every object planned
    # after the PUT below lives 8 units from its creation. The stream is created first, at `rate`; the
    # N background clusters right after it, as fast as possible; both go ready 8 units after creation, so
    # the stream lands (in the order and at the pace it was created) while every background cluster sits
    # in installing, provided the background was all created and installing by then:
    # duration + gap + creation time + 2 units < 8 units.
    create_est = n / args.create_rate
    scale = args.scale or max(4.0, (args.duration + gap + create_est + 15.0) / 6.0)
    log(f"--- staggered, {mode}, {n} in flight, {m} changes at {args.rate}/s; demo scale {scale:.1f} "
        f"(lifetime {8 * scale:.0f} s)")
    stack = Stack(args.hcprp, polling, args.keep, getattr(args, "seed_store", None),
                  getattr(args, "store_url", None))
    try:
        subs = [Arm(stack.endpoint, resource_group="bench-rg") for _ in range(max(1, n // 100))]
        for a in subs:
            a.register()
        watcher = EventWatcher(stack.cs_url)
        watcher.start()
        by_key, arm_of = {}, {}

        def create(job):
            arm, name = job
            r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name), timeout=120)
            if r.status != 201:
                raise BenchError(f"create {name}: {r!r}")
            url = r.header("Azure-AsyncOperation")
            by_key[(arm.subscription.lower(), name.lower())] = url
            arm_of[url] = arm
            return url

        set_timing(stack.cs_url, "demo", scale)
        t0 = time.time()
        # The stream: one PUT every 1/rate s (issued from a pool so that a slow answer does not delay
        # the next one).
        stream_urls = [None] * m
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            futs = []
            for k in range(m):
                delay = t0 + k / args.rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                futs.append(pool.submit(create, (subs[k % len(subs)], f"s{k:05d}")))
            for k, f in enumerate(futs):
                stream_urls[k] = f.result()
        t_stream = time.time()
        time.sleep(max(0.0, t0 + args.duration + gap - time.time()))
        t_bg = time.time()
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            bg_urls = list(pool.map(create, [(subs[i % len(subs)], f"c{i:05d}") for i in range(n)]))
        t_bg_done = time.time()
        log(f"stream created in {t_stream - t0:.1f}s; {n} background clusters in {t_bg_done - t_bg:.1f}s "
            f"({n / (t_bg_done - t_bg):.0f}/s)")
        window = t0 + 8 * scale
        if t_bg_done + 2 * scale > window - 2:
            raise BenchError(f"background creation took {t_bg_done - t_bg:.0f}s: too long for scale {scale:.1f}; "
                             f"pass a smaller --create-rate or a larger --scale")

        # Sample: every k-th stream cluster, polled every poll_interval from 1 s before its expected change
        # (creation + 8 units) until its status shows Succeeded.
        step = max(1, m // max(1, args.stagger_sample))
        sample = stream_urls[::step][:args.stagger_sample]
        first_seen, polls = {}, []

        def poll_one(k, url):
            getter = KeepAliveGetter(stack.endpoint)
            time.sleep(max(0.0, window + k / args.rate - 1.0 - time.time()))
            count = 0
            deadline = time.time() + 120
            while time.time() < deadline:
                status, body = getter.get(arm_of[url], url)
                count += 1
                if status == 200 and body.get("status") == "Succeeded":
                    first_seen[url] = time.time()
                    break
                time.sleep(args.poll_interval)
            polls.append(count)

        threads = [threading.Thread(target=poll_one, args=(stream_urls.index(u), u), daemon=True) for u in sample]
        for t in threads:
            t.start()

        # Just before the stream lands: every background cluster must be installing, none ready.
        time.sleep(max(0.0, window - 1.0 - time.time()))
        bg_set = set(bg_urls)
        with watcher.lock:
            bg_states = [watcher.state.get(h) for h, key in watcher.key.items() if by_key.get(key) in bg_set]
            stream_ready_early = len(watcher.ready_at)
        installing = sum(1 for st in bg_states if st == "installing")
        log(f"window opens: {installing}/{n} background clusters installing, {stream_ready_early} ready")
        if installing != n or stream_ready_early:
            raise BenchError(f"at the window {installing}/{n} background clusters installing, "
                             f"{stream_ready_early} clusters already ready: the hold was too short")
        # The background stays until t_bg + 8 units; freeze it once the stream is out of the simulator.
        freeze_at = min(window + args.duration + gap / 2.0, t_bg + 8 * scale - 2)
        time.sleep(max(0.0, freeze_at - time.time()))
        stream_set = set(stream_urls)
        with watcher.lock:
            bg_ready = sum(1 for h, key in watcher.key.items() if by_key.get(key) in bg_set and h in watcher.ready_at)
            stream_ready = sum(1 for h, key in watcher.key.items()
                               if by_key.get(key) in stream_set and h in watcher.ready_at)
        set_timing(stack.cs_url, "demo", 1000)
        log(f"stream out of the simulator: {stream_ready}/{m} ready; background ready: {bg_ready}; frozen")
        if bg_ready or stream_ready != m:
            raise BenchError(f"{bg_ready} background clusters went ready / {stream_ready} of {m} stream changes")
        for t in threads:
            t.join(timeout=150)

        def all_succeeded():
            st = get_statuses(arm_of, stream_urls)
            return st if all(b.get("status") == "Succeeded" for b in st.values()) else None
        final = wait_for(all_succeeded, 300, interval=1, what="every stream operation Succeeded")
        if watcher.error:
            raise BenchError(f"event watcher: {watcher.error}")

        change, arrival = {}, {}
        for href, key in watcher.key.items():
            url = by_key.get(key)
            if url in stream_set and href in watcher.ready_at:
                # The simulator's last_transition_timestamp has whole seconds only: the change time is
                # when its ready event reached this program's long poll (a few ms after the commit).
                change[url] = watcher.ready_at[href]
                arrival[url] = watcher.sim_ready_at.get(href, watcher.ready_at[href])
        if len(change) != m:
            raise BenchError(f"matched {len(change)} ready events to {m} stream operations")
        ts = sorted(change.values())
        pace = (ts[-1] - ts[0]) / max(1, len(ts) - 1)
        commit = [parse_time(final[u]["endTime"]) - change[u] for u in stream_urls]
        seen = [first_seen[u] - change[u] for u in sample if u in first_seen]
        row = {"kind": "staggered", "mode": mode, "n": n, "changes": m, "pace_ms": pace * 1000,
               "event_lag_p50": percentile([change[u] - arrival[u] for u in stream_urls], 50),
               "commit_p50": percentile(commit, 50), "commit_p99": percentile(commit, 99),
               "commit_max": max(commit),
               "seen_p50": percentile(seen, 50), "seen_p99": percentile(seen, 99),
               "seen_max": max(seen) if seen else float("nan"),
               "sample": len(sample), "seen_n": len(seen), "polls": sum(polls), "scale": scale}
        log(f"result: {json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()})}")
        if len(seen) != len(sample):
            raise BenchError(f"only {len(seen)} of {len(sample)} sampled operations seen Succeeded")

        burst = None
        if args.no_burst:
            watcher.stop = True
        else:
            log(f"burst on the {n} background clusters")
            burst = run_burst(args, stack, watcher, arm_of, by_key, bg_urls, mode, n, ready_before=m)
        return row, burst
    finally:
        stack.close()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_idle_cpu(args, subscriptions, seconds, polling=False):
    mode = "polling (10 s)" if polling else "event stream"
    log(f"--- idle backend CPU, {subscriptions} registered subscriptions, {mode}")
    stack = Stack(args.hcprp, polling, args.keep)
    try:
        def reg(i):
            Arm(stack.endpoint).register()
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(reg, range(subscriptions)))
        log(f"registered {subscriptions} subscriptions in {time.monotonic() - t0:.1f}s")
        time.sleep(5)  # the backend reads the subscription documents from the change feed
        pid = stack.backend.p.pid
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(seconds)
        c1, w1 = cpu_seconds(pid), time.monotonic()
        share = 100.0 * (c1 - c0) / (w1 - w0)
        log(f"backend used {c1 - c0:.2f} s CPU in {w1 - w0:.1f} s: {share:.2f}% of one core")
        return {"mode": mode, "subs": subscriptions, "seconds": w1 - w0, "cpu": c1 - c0, "share": share}
    finally:
        stack.close()


def main_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hcprp", help="path to the hcprp binary")
    ap.add_argument("--quick", action="store_true", help="1,000 operations only; 10 s CPU sample")
    ap.add_argument("--sizes", help="comma-separated operation counts (default 1000,10000)")
    ap.add_argument("--modes", default="events,polling", help="events, polling or both")
    ap.add_argument("--sample", type=int, default=200, help="burst: operations polled live on the status endpoint")
    ap.add_argument("--rate", type=float, default=20, help="staggered: changes per second")
    ap.add_argument("--duration", type=float, default=20, help="staggered: seconds of changes")
    ap.add_argument("--gap", type=float, default=15,
                    help="staggered: seconds between the last change and the first background cluster's hold ending")
    ap.add_argument("--stagger-sample", type=int, default=40, help="staggered: changed operations polled live")
    ap.add_argument("--poll-interval", type=float, default=0.01, help="staggered: seconds between a sample's GETs")
    ap.add_argument("--create-rate", type=float, default=40,
                    help="staggered: expected ARM creations per second (sizes the hold); see --scale")
    ap.add_argument("--scale", type=float, help="staggered: demo time scale (default: from --create-rate)")
    ap.add_argument("--no-burst", action="store_true", help="staggered only")
    ap.add_argument("--no-staggered", action="store_true", help="burst only, on its own stack (the old method)")
    ap.add_argument("--cpu-subscriptions", type=int, default=10000)
    ap.add_argument("--cpu-seconds", type=float, default=30)
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--proxy-to", help=argparse.SUPPRESS)
    ap.add_argument("--proxy-ready-file", help=argparse.SUPPRESS)
    ap.add_argument("--seed-store", help="staggered: start from a copy of this SQLite store file")
    ap.add_argument("--store-url", help="staggered: use this store (a PostgreSQL URL) instead of a new SQLite one")
    return ap


def main():
    ap = main_parser()
    args = ap.parse_args()
    if args.proxy_to:
        run_proxy(args.proxy_to, args.proxy_ready_file)
        return 0
    if not args.hcprp:
        ap.error("--hcprp is required")
    args.hcprp = os.path.abspath(args.hcprp)
    sizes = [int(s) for s in args.sizes.split(",") if int(s) > 0] if args.sizes else ([1000] if args.quick else [1000, 10000])
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    cpu_seconds_wanted = 10 if args.quick and args.cpu_seconds == 30 else args.cpu_seconds

    rows, stag_rows, cpu_rows = [], [], []
    failures = []
    for n in sizes:
        for m in modes:
            try:
                if args.no_staggered:
                    rows.append(measure_propagation(args, m == "polling", n))
                else:
                    row, burst = measure_staggered(args, m == "polling", n)
                    stag_rows.append(row)
                    if burst:
                        rows.append(burst)
            except BenchError as e:
                log(f"FAILED ({m}, {n}): {e}")
                failures.append(f"{m}, {n} in flight: {e}")
    if not args.skip_cpu:
        cpu_rows.append(measure_idle_cpu(args, args.cpu_subscriptions, cpu_seconds_wanted))

    print()
    print(f"Staggered: N operations held in installing while other clusters go installing -> ready one by one "
          f"({args.rate:g}/s for {args.duration:g} s)")
    print("  change = arrival of the cluster's ready event on this program's long poll of the simulator's events")
    print("  commit = operation endTime - change, every changed operation")
    print(f"  seen   = first GET showing Succeeded - change, sampled operations each polled every "
          f"{args.poll_interval * 1000:g} ms")
    hdr = (f"{'backend mode':<16}{'in flight':>10}{'changes':>8}{'pace':>8}{'commit p50':>12}{'commit p99':>12}"
           f"{'commit max':>12}{'seen p50':>10}{'seen p99':>10}{'seen max':>10}{'sample':>8}")
    print(hdr)
    print("-" * len(hdr))
    for r in stag_rows:
        print(f"{r['mode']:<16}{r['n']:>10}{r['changes']:>8}{r['pace_ms']:>6.0f}ms{r['commit_p50']:>11.3f}s"
              f"{r['commit_p99']:>11.3f}s{r['commit_max']:>11.3f}s{r['seen_p50']:>9.3f}s{r['seen_p99']:>9.3f}s"
              f"{r['seen_max']:>9.3f}s{r['seen_n']:>8}")
    print()
    print("Burst throughput: all N flipped installing -> ready at one instant")
    print("  commit = operation endTime (the backend's write the status endpoint renders), all operations")
    print("  seen   = first GET of the status endpoint that shows Succeeded, sampled operations polled in a loop")
    hdr = (f"{'backend mode':<16}{'in flight':>10}{'CS flip spread':>16}{'commit p50':>12}{'commit p99':>12}"
           f"{'commit max':>12}{'seen p50':>10}{'seen p99':>10}{'sample':>8}{'poll round':>12}{'all done':>10}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['mode']:<16}{r['n']:>10}{r['flip_spread']:>15.2f}s{r['commit_p50']:>11.3f}s"
              f"{r['commit_p99']:>11.3f}s{r['commit_max']:>11.3f}s{r['seen_p50']:>9.3f}s{r['seen_p99']:>9.3f}s"
              f"{r['sample']:>8}{r['poll_round'] * 1000:>10.0f}ms{r['all_done']:>9.1f}s")
    print("  CS flip spread: from the flip request to the last ready event; all done: flip to the last endTime.")
    for c in cpu_rows:
        print()
        print(f"Idle backend CPU ({c['mode']}): {c['subs']} registered subscriptions, nothing in flight: "
              f"{c['cpu']:.2f} s of CPU in {c['seconds']:.1f} s = {c['share']:.2f}% of one core (target < 2%)")
    for f in failures:
        print(f"NOT MEASURED: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
