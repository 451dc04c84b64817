#!/usr/bin/env python3
"""An update left in doubt between the Cluster Service and the store is resolved in seconds.

The frontend records an update (the new values and an operation marked awaitingClusterService), PATCHes
the Cluster Service, then removes the mark. A relay between the frontend and the Cluster Service stops
at the exact point where it matters and breaks things there:

- PostgreSQL is stopped as by a crash (`pg_ctl stop -m immediate`) after the Cluster Service took the
  PATCH and before its answer reaches the frontend, so the frontend cannot record the confirmation;
- the frontend is killed (SIGKILL) with its PATCH in hand, before the Cluster Service sees it.

Either way the resource answered 409 to every write until `--create-recovery-seconds` (120 s) had
passed; the backend now resolves the update from what the Cluster Service holds (src/backend/
update_recovery.h): confirmed when the object holds it, sent by the backend when it does not and the
frontend is taken for gone. The test prints how long after the fault the resource took a write again,
and fails only past a bound far below the old grace (UPDATE_IN_DOUBT_BOUND_SECONDS raises it, to
measure a build without the recovery).

Exits 77 (skipped) when the PostgreSQL server binaries are absent.
"""

import http.client
import json
import os
import socketserver
import ssl
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import pg  # noqa: E402
from e2e import Arm, expect, expect_eq, run_tests  # noqa: E402

# The resource must take a write again well before the old grace (--create-recovery-seconds, 120 s).
BOUND_SECONDS = float(os.environ.get("UPDATE_IN_DOUBT_BOUND_SECONDS", "45"))


class Relay:
    """HTTPS in front of the Cluster Service for the frontend: forwards every request with the resource
    provider's certificate. `on_patch(stage)` runs for each PATCH, with stage "request" before it is sent
    on and "answer" after the Cluster Service answered and before the frontend gets the answer."""

    def __init__(self, tls, upstream, on_patch):
        host, port = upstream.split("://", 1)[1].rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.up_ssl = tls.rp_context()
        self.on_patch = on_patch
        server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls.ca)
        server_ssl.load_cert_chain(tls.server_cert, tls.server_key)
        server_ssl.verify_mode = ssl.CERT_REQUIRED
        relay = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                try:
                    conn = server_ssl.wrap_socket(self.connection, server_side=True)
                except (OSError, ssl.SSLError):
                    return
                with conn, conn.makefile("rb") as rfile:
                    try:
                        while relay._one(conn, rfile):
                            pass
                    except (OSError, ssl.SSLError, ValueError):
                        return

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _one(self, conn, rfile):
        line = rfile.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        while True:
            h = rfile.readline().decode("latin-1")
            if h in ("\r\n", "\n", ""):
                break
            k, v = h.split(":", 1)
            headers[k.strip()] = v.strip()
        length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
        body = rfile.read(length) if length else None
        if method == "PATCH":
            self.on_patch("request")
        up = http.client.HTTPSConnection(*self.upstream, context=self.up_ssl, timeout=60)
        forwarded = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
        up.request(method, target, body=body, headers=forwarded)
        r = up.getresponse()
        data = r.read()
        up.close()
        if method == "PATCH":
            self.on_patch("answer")
        head = [f"HTTP/1.1 {r.status} {r.reason}"]
        head += [f"{k}: {v}" for k, v in r.getheaders()
                 if k.lower() not in ("content-length", "connection", "transfer-encoding")]
        head += [f"Content-Length: {len(data)}", "", ""]
        conn.sendall("\r\n".join(head).encode("latin-1") + data)
        return True

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Fault:
    """What the relay does at the next PATCH's `stage`, once."""

    def __init__(self):
        self.stage = None
        self.action = None
        self.done = threading.Event()
        self.at = None

    def arm(self, stage, action):
        self.stage, self.action = stage, action

    def __call__(self, stage):
        if self.action is None or stage != self.stage or self.done.is_set():
            return
        self.at = time.monotonic()
        self.action()
        self.done.set()


def deployment(ctx, server):
    """Cluster Service, a frontend behind the relay and a backend, all on `server`; a cluster with a
    node pool ready. Returns (arm, fault, frontend process, store URL, Cluster Service URL)."""
    store = server.url()
    cs_url, _ = ctx.clusters_service(profile="instant")
    fault = Fault()
    relay = Relay(ctx.tls, cs_url, fault)
    ctx.closers.append(relay.close)
    endpoint, frontend = ctx.frontend(store, relay.url)
    ctx.backend(store, cs_url, ["--resync-seconds", "3600"])
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path("c1"), arm.cluster_body("c1"))
    expect_eq(r.status, 201, f"cluster create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "cluster create")
    r = arm.call("PUT", arm.nodepool_path("c1", "np1"), arm.nodepool_body("c1", replicas=2))
    expect_eq(r.status, 201, f"node pool create ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "node pool create")
    return arm, fault, frontend, store, cs_url


def scale(arm, replicas, timeout=30):
    return arm.call("PATCH", arm.nodepool_path("c1", "np1"), {"properties": {"replicas": replicas}}, timeout=timeout)


def seconds_until_writable(arm, since, replicas):
    """Tries a write every 0.1 s until one is accepted; returns the seconds since `since`."""
    while True:
        r = scale(arm, replicas)
        if r.status in (200, 202):
            return time.monotonic() - since, r
        expect(r.status in (409, 503), f"a write while the update is in doubt: {r!r}")
        expect(time.monotonic() - since < BOUND_SECONDS,
               f"the resource took no write within {BOUND_SECONDS} s of the fault (last answer {r!r})")
        time.sleep(0.1)


def replicas_in_cluster_service(ctx, cs_url):
    host, port = cs_url.split("://", 1)[1].rstrip("/").split(":")
    c = http.client.HTTPSConnection(host, int(port), context=ctx.tls.rp_context(), timeout=30)
    c.request("GET", "/api/aro_hcp/v1alpha1/clusters")
    clusters = json.loads(c.getresponse().read())["items"]
    href = clusters[0]["href"]
    c.request("GET", href + "/node_pools")
    pools = json.loads(c.getresponse().read())["items"]
    c.close()
    return pools[0]["replicas"]


def test_postgres_crash_after_the_cluster_service_took_a_patch(ctx):
    server = pg.PgServer()
    ctx.closers.append(server.close)
    arm, fault, _, store, cs_url = deployment(ctx, server)
    fault.arm("answer", lambda: server.stop(mode="immediate"))
    r = scale(arm, 3, timeout=60)
    expect(fault.done.is_set(), "the relay stopped PostgreSQL at the PATCH's answer")
    print(f"PATCH answered {r.status} with PostgreSQL down after the Cluster Service took it", flush=True)
    server.start()
    up = time.monotonic()
    took, r = seconds_until_writable(arm, up, 4)
    print(f"writable again {took:.2f} s after PostgreSQL was back "
          f"({time.monotonic() - fault.at:.2f} s after the crash; the old grace was 120 s)", flush=True)
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "the write after the recovery")
    expect_eq(replicas_in_cluster_service(ctx, cs_url), 4, "replicas in the Cluster Service")
    ctx.check(store, cs_url)


def test_frontend_killed_before_its_patch_reached_the_cluster_service(ctx):
    server = pg.PgServer()
    ctx.closers.append(server.close)
    arm, fault, frontend, store, cs_url = deployment(ctx, server)
    killed = threading.Event()

    def kill_frontend():
        frontend.kill()
        killed.set()
        raise ConnectionAbortedError("the frontend is gone")  # the PATCH goes no further

    fault.arm("request", kill_frontend)
    answer = None
    try:
        answer = scale(arm, 3, timeout=10)
    except OSError:
        pass  # the frontend died with the request
    expect(killed.is_set(), f"the relay killed the frontend at the PATCH (the PATCH was answered {answer!r})")
    endpoint, _ = ctx.frontend(store, cs_url)
    arm2 = Arm(endpoint, subscription=arm.subscription, tenant=arm.tenant, client_id=arm.client_id,
               resource_group=arm.resource_group)
    took, r = seconds_until_writable(arm2, fault.at, 4)
    print(f"writable again {took:.2f} s after the frontend was killed (the old grace was 120 s)", flush=True)
    seen, _ = arm2.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.1)
    expect_eq(seen[-1], "Succeeded", "the write after the recovery")
    expect_eq(replicas_in_cluster_service(ctx, cs_url), 4, "replicas in the Cluster Service")
    ctx.check(store, cs_url)


if __name__ == "__main__":
    pg.skip_unless_available()
    run_tests([test_postgres_crash_after_the_cluster_service_took_a_patch,
               test_frontend_killed_before_its_patch_reached_the_cluster_service])
