"""A multi-process deployment with each process in its own network namespace (netns.py), for partition
tests, and the load and verdict the partition tests share.

    net = netns.Net()
    d = Deployment(ctx, net, frontends=1, backends=2)
    d.pg         PostgreSQL (tests/e2e_pg/pg.py) in namespace "pg", listening on its address
    d.cs_url     the Cluster Service simulator (with the provisioning engine: simulated Azure) in namespace
                 "cs"; d.cs reads it (and its /control GETs) over its listener with the RP's certificate
    d.frontends  [(node, ARM endpoint, Proc)], d.backends {owner: (node, Proc)}

Every hcprp listener presents a certificate of the run's local CA valid for every address of the test
network (the generated one names loopback only). The test talks to frontends directly, without the
capturing proxy of tests/e2e (its traffic is the other tests' to validate).
"""

import json
import os
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e_pg"))

import e2e  # noqa: E402
from multiprocess import shards_held  # noqa: E402,F401  (the partition tests take it from here)
import pg  # noqa: E402
from e2e import TERMINAL, Arm, CsClient, TestFailure, expect, expect_eq, url_after  # noqa: E402


class NamespacedPg(pg.PgServer):
    """pg.PgServer run inside `node`'s namespace, listening on loopback and the node's address, trusting
    the test network."""

    def __init__(self, node, **kw):
        self.node = node
        self._hba_done = False
        super().__init__(**kw)

    def start(self, timeout=60):
        if not self._hba_done:
            with open(os.path.join(self.data, "pg_hba.conf"), "a") as f:
                f.write(f"host all all {self.node.net.prefix}.0/24 trust\n")
            self._hba_done = True
        super().start(timeout)

    def _server_options(self):
        return super()._server_options().replace("listen_addresses=127.0.0.1",
                                                 f"listen_addresses=127.0.0.1,{self.node.ip}")

    def url(self, database=None, schema=None):
        return super().url(database, schema).replace("@127.0.0.1:", f"@{self.node.ip}:")

    def _tool(self, tool, *args, timeout=60):
        argv = [os.path.join(self.bin, tool), *args]
        if self.as_root:
            argv = ["runuser", "-u", pg.SERVER_USER, "--", *argv]
        try:
            r = subprocess.run(self.node.wrap(argv), capture_output=True, stdin=subprocess.DEVNULL,
                               timeout=timeout, cwd=self.dir if self.dir else "/")
        except subprocess.TimeoutExpired as e:
            raise pg.PgError(f"{tool} did not finish within {timeout}s") from e
        out = r.stdout.decode("utf-8", "replace")
        if r.returncode != 0:
            raise pg.PgError(f"{tool} {' '.join(args)} exited {r.returncode}: "
                             f"{out[-1000:]} {r.stderr.decode('utf-8', 'replace')[-2000:]}")
        return out


def reissue_server_certificate(tls, net):
    """Replaces the listeners' certificate with one of the same key and CA valid for the test network."""
    d = tls.dir
    sans = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"] + [f"IP:{net.prefix}.{i}" for i in range(1, 40)]
    ext = os.path.join(d, "partition-san.cnf")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=" + ",".join(sans) + "\n")
    csr = os.path.join(d, "partition-server.csr")
    for argv in (["openssl", "req", "-new", "-key", tls.server_key, "-subj", "/CN=hcprp partition test",
                  "-out", csr],
                 ["openssl", "x509", "-req", "-in", csr, "-CA", tls.ca, "-CAkey", os.path.join(d, "ca-key.pem"),
                  "-set_serial", str(random.randrange(1, 2**62)), "-days", "2", "-extfile", ext,
                  "-out", tls.server_cert]):
        r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
        if r.returncode != 0:
            raise TestFailure(f"{' '.join(argv[:2])}: {r.stderr.decode(errors='replace')}")


def prepare_tls(ctx, net):
    """The run's TLS folder, made by a first, short-lived simulator, then a certificate for the network."""
    p = ctx.spawn("tls-init", [e2e.ARGS.hcprp, "clusters-service", "--listen", "127.0.0.1:0",
                               "--data-dir", ctx.path("tls-init"), "--tls-dir", ctx.tls.dir])
    p.wait_line(url_after("listening on"))
    p.stop()
    reissue_server_certificate(ctx.tls, net)


def spawn_frontend(ctx, node, store, cs_url, extra=()):
    """An hcprp frontend in `node`'s namespace, listening on its address; returns (ARM endpoint, Proc)."""
    p = ctx.spawn(node.name, node.wrap([
        e2e.ARGS.hcprp, "frontend", "--store", store, "--clusters-service", cs_url,
        "--listen", f"{node.ip}:0", "--retry-after", "1", "--tls-dir", ctx.tls.dir, *extra]))
    return p.wait_line(url_after("listening on")), p


class Deployment:
    def __init__(self, ctx, net, frontends=1, backends=2, time_scale="0.1", backend_extra=(),
                 frontend_extra=(), backend_env=None):
        self.ctx = ctx
        self.net = net
        self.hcprp = e2e.ARGS.hcprp
        self.backend_extra = list(backend_extra)
        self.backend_env = backend_env or {}
        self.pg_node = net.node("pg")
        self.pg = NamespacedPg(self.pg_node)
        ctx.closers.append(self.pg.close)
        self.store = self.pg.url()
        prepare_tls(ctx, net)
        self.cs_node = net.node("cs")
        self.cs_proc = ctx.spawn("clusters-service", self.cs_node.wrap([
            self.hcprp, "clusters-service", "--listen", f"{self.cs_node.ip}:0", "--data-dir", ctx.path("cs"),
            "--profile", "demo", "--time-scale", time_scale, "--provisioner", "engine",
            "--tls-dir", ctx.tls.dir]))
        self.cs_url = self.cs_proc.wait_line(url_after("listening on"))
        ctx.cs_url = self.cs_url
        self.cs = CsClient(self.cs_url)
        self.frontends = [self.start_frontend(f"fe{i + 1}", frontend_extra) for i in range(frontends)]
        self.backends = {}
        for i in range(backends):
            self.start_backend(f"be{i + 1}")

    def start_frontend(self, name, extra=()):
        node = self.net.get(name) or self.net.node(name)
        endpoint, p = spawn_frontend(self.ctx, node, self.store, self.cs_url, extra)
        return node, endpoint, p

    def start_backend(self, owner, extra=(), env=None):
        node = self.net.get(owner) or self.net.node(owner)
        argv = [self.hcprp, "backend", "--store", self.store, "--clusters-service", self.cs_url,
                "--tls-dir", self.ctx.tls.dir, "--owner", owner, *self.backend_extra, *extra]
        full_env = None
        if env or self.backend_env:
            full_env = dict(os.environ)
            full_env.update(self.backend_env)
            full_env.update(env or {})
            # ip netns exec keeps the environment.
        p = self.ctx.spawn(owner, node.wrap(argv), env=full_env)
        p.wait_line(lambda line: "backend running" in line)
        self.backends[owner] = (node, p)
        return node, p

    def check(self):
        return self.ctx.check(self.store, self.cs_url)


class Load(threading.Thread):
    """One client of one frontend: creates and (unless deletes=False) deletes clusters in its own resource
    group, recording every
    acknowledged operation and every answer's status. A call that gets no answer within `call_timeout`
    counts as hung."""

    def __init__(self, index, endpoint, subscription, seed, stop, call_timeout=20, deletes=True,
                 settled_deletes=False):
        super().__init__(daemon=True)
        self.deletes = deletes
        # Delete only clusters whose create has ended (else also those whose create is in flight).
        self.settled_deletes = settled_deletes
        self.create_ops = {}  # name -> its create's Azure-AsyncOperation URL
        self.index = index
        self.rng = random.Random(seed * 31 + index)
        self.stop = stop
        self.call_timeout = call_timeout
        self.arm = Arm(endpoint, subscription=subscription, resource_group=f"part-rg-{index}")
        self.live = []  # clusters whose create was acknowledged and that we did not delete
        self.ops = []  # (what, Azure-AsyncOperation URL)
        self.statuses = {}  # HTTP status -> count
        self.bad = []  # answers that are neither success nor a 503 with Retry-After, and hangs
        self.max_latency = 0.0
        self.n = 0

    def call(self, method, path, body=None):
        start = time.monotonic()
        try:
            r = self.arm.call(method, path, body, timeout=self.call_timeout)
        except Exception as e:  # a transport failure: no answer
            took = time.monotonic() - start
            self.statuses["no answer"] = self.statuses.get("no answer", 0) + 1
            if took >= self.call_timeout - 0.5:
                self.bad.append(f"{method} {path}: no answer within {took:.1f}s ({e!r})")
            return None
        self.max_latency = max(self.max_latency, time.monotonic() - start)
        self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
        if r.status >= 500 and (r.status != 503 or not r.header("Retry-After")):
            self.bad.append(f"{method} {path}: {r.status} Retry-After={r.header('Retry-After')} {r.raw[:200]}")
        return r

    def step(self):
        self.n += 1
        if self.deletes and self.live and (len(self.live) >= 3 or self.rng.random() < 0.4):
            name = self.live[self.rng.randrange(len(self.live))]
            if self.settled_deletes and self.status(self.create_ops.get(name, "")) not in TERMINAL:
                return
            self.live.remove(name)
            r = self.call("DELETE", self.arm.cluster_path(name))
            if r is not None and r.status == 202:
                self.ops.append((f"delete {name}", r.header("Azure-AsyncOperation")))
            elif r is None or r.status != 404:
                self.live.append(name)  # try again later
            return
        name = f"c{self.index}-{self.n}"
        r = self.call("PUT", self.arm.cluster_path(name), self.arm.cluster_body(name))
        if r is not None and r.status in (200, 201):
            self.ops.append((f"create {name}", r.header("Azure-AsyncOperation")))
            self.create_ops[name] = r.header("Azure-AsyncOperation")
            self.live.append(name)

    def run(self):
        while not self.stop.is_set():
            self.step()
            self.stop.wait(self.rng.uniform(0.05, 0.3))

    def status(self, url):
        if not url:
            return None
        try:
            r = self.arm.call("GET", url, timeout=self.call_timeout)
        except Exception:
            return None
        return r.body.get("status") if r.status == 200 and isinstance(r.body, dict) else None


def service_resources(cs):
    r = cs.call("GET", "/control/azure/resources")
    expect_eq(r.status, 200, f"/control/azure/resources ({r!r})")
    return [x for x in r.body.get("items", []) if not x.get("customerOwned", True)]


def log_lines(d, object_id, name):
    """Prints every log line of the run, and every committed write the audit trigger recorded (when
    installed), that names the Cluster Service object or the resource."""
    if name:
        try:
            print(d.pg.psql("SELECT to_char(at, 'HH24:MI:SS.MS'), host(client), op, container, left(id, 200) "
                            f"FROM public.write_audit WHERE id LIKE '%/{name}%' OR id LIKE '%{object_id}%' "
                            "ORDER BY at"), flush=True)
        except Exception as e:
            print(f"  (no write audit: {e})", flush=True)
    for p in d.ctx.procs:
        try:
            with open(p.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        for ln in lines:
            if object_id in ln or (name and (f"/{name}" in ln or f'"{name}"' in ln)):
                print(f"  {p.name}: {ln[:500]}", flush=True)


def check_clean(d, when=""):
    """`hcprp check` finds nothing; on a finding, the Cluster Service objects it names are printed."""
    r = subprocess.run([d.hcprp, "check", "--store", d.store, "--clusters-service", d.cs_url,
                        "--gc-window-seconds", "0", "--json", "--tls-dir", d.ctx.tls.dir],
                       capture_output=True, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0:
        for line in out.splitlines():
            try:
                violations = json.loads(line).get("violations", [])
            except ValueError:
                continue
            for v in violations:
                if str(v.get("subject", "")).startswith("/api/"):
                    g = d.cs.call("GET", v["subject"])
                    print(f"{v['subject']}: {g.status} {g.raw[:600]}", flush=True)
                    log_lines(d, v["subject"].rsplit("/", 1)[-1],
                              (g.body or {}).get("name") if g.status == 200 else None)
    expect(r.returncode == 0, f"hcprp check {when} exited {r.returncode}: {out} {r.stderr.decode()[-2000:]}")


def verdict(d, loads, settle=60):
    """Every acknowledged operation ends (deletes Succeeded), `hcprp check` is clean, then everything is
    deleted and nothing is left in the store (ARM lists nothing), the Cluster Service or the simulated
    Azure. Returns the counts printed."""
    deadline = time.monotonic() + settle
    final = {}
    while True:
        pending = 0
        for ld in loads:
            for what, url in ld.ops:
                if url in final and final[url][1] in TERMINAL:
                    continue
                final[url] = (what, ld.status(url))
                pending += final[url][1] not in TERMINAL
        if pending == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    stuck = sorted(f"{w}: {s}" for w, s in final.values() if s not in TERMINAL)
    failed_deletes = sorted(f"{w}: {s}" for w, s in final.values() if w.startswith("delete") and s != "Succeeded"
                            and s in TERMINAL)
    acked = sum(len(ld.ops) for ld in loads)
    print(f"{acked} operations acknowledged, {len(stuck)} not terminal, {len(failed_deletes)} deletes not "
          f"Succeeded", flush=True)
    expect_eq(stuck, [], "operations not terminal after the bounded wait")
    expect_eq(failed_deletes, [], "deletes that did not succeed")
    check_clean(d)

    # Nothing lost: every cluster whose create was acknowledged and not deleted is there.
    deletes = []
    for ld in loads:
        listed = ld.arm.call("GET", f"{ld.arm.rg_path()}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
        expect_eq(listed.status, 200, f"cluster list of client {ld.index}")
        names = {x["name"] for x in listed.body.get("value", [])}
        lost = sorted(set(ld.live) - names)
        expect_eq(lost, [], f"acknowledged clusters missing from client {ld.index}'s list")
        for name in sorted(names):
            r = ld.arm.call("DELETE", ld.arm.cluster_path(name))
            expect(r.status in (202, 204), f"final delete of {name}: {r!r}")
            if r.status == 202:
                deletes.append((ld, r.header("Azure-AsyncOperation")))
    deadline = time.monotonic() + settle
    for ld, op in deletes:
        while ld.status(op) not in TERMINAL:
            expect(time.monotonic() < deadline, f"final delete {op} not terminal after {settle}s")
            time.sleep(0.3)
        expect_eq(ld.status(op), "Succeeded", f"final delete {op}")
    subs = {ld.arm.subscription for ld in loads}
    for sub in subs:
        try:
            e2e.wait_until(lambda: d.cs.clusters(sub).get("items", []) == [], 30,
                           what="the Cluster Service to have no cluster left")
        except TestFailure:
            for item in d.cs.clusters(sub).get("items", []):
                print(f"left in the Cluster Service: {item.get('name')} {item.get('href')} "
                      f"{item.get('status', {}).get('state')}", flush=True)
                log_lines(d, item.get("href", "").rsplit("/", 1)[-1], item.get("name"))
            raise
    e2e.wait_until(lambda: service_resources(d.cs) == [], 30,
                   what="the simulated Azure to have no resource of the service left")
    check_clean(d, "after the final deletes")
    print(f"lost: 0, stuck: 0, leaked: 0 (store, Cluster Service, simulated Azure)", flush=True)
    return {"acknowledged": acked, "lost": 0, "stuck": 0, "leaked": 0}
