"""Shared harness of the end-to-end tests: real hcprp processes on free ports, over HTTPS.

Each test file calls run_tests([...]) with functions taking a Ctx. A Ctx owns a temporary directory
and every process it started; they are killed when the test ends, whatever the outcome. The file
prints "N passed, M failed" last and exits non-zero when something failed.

Every ARM endpoint a Ctx hands out (serve(), frontend()) is a capturing proxy in front of the real
frontend (capture.py): all clients' traffic is recorded in oav's format under --traffic-dir (by default
a folder in the test's temporary directory), one file per exchange, for tests/oav/validate.py.

Every process of a Ctx shares one TLS folder (--tls-dir), created with its local CA by the first hcprp
process: ARM callers present its client.pem (the proxy checks it, then presents it to the frontend), the
Cluster Service is called with rp-client.pem, and its /control API on the control listener with the token.
"""

import argparse
import http.server
import json
import os
import queue
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid

from capture import CaptureProxy

API_VERSION = "2026-10-01"
PROVIDER = "/providers/Microsoft.RedHatOpenShift"
CS_PREFIX = "/api/aro_hcp/v1alpha1"
TERMINAL = ("Succeeded", "Failed", "Canceled")

ARGS = None  # set by run_tests: .hcprp, .hcpctl, .keep, .traffic_dir
SCRIPT = os.path.splitext(os.path.basename(sys.argv[0]))[0]


# requestAdminCredential takes a certificate signing request in its body from these api-versions on.
CSR_API_VERSIONS = ("2026-09-01-preview", "2026-10-01")


def admin_csr():
    """A PEM certificate signing request (new EC key, openssl) with the subject the service requires of
    the break-glass administrator's credential."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-keyout", os.path.join(d, "key.pem"),
                            "-subj", "/O=system:masters/CN=system:customer-break-glass:system-admin"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise TestFailure(f"openssl req: {r.stderr.decode(errors='replace')}")
        return r.stdout.decode()


def credential_request_body(api_version=API_VERSION):
    """The requestAdminCredential body of `api_version` (None before the CSR versions)."""
    return {"certificateSigningRequest": admin_csr()} if api_version in CSR_API_VERSIONS else None


class TestFailure(AssertionError):
    pass


def expect(cond, message):
    if not cond:
        raise TestFailure(message)


def expect_eq(actual, expected, what):
    if actual != expected:
        raise TestFailure(f"{what}: expected {expected!r}, got {actual!r}")


def wait_until(fn, timeout, interval=0.1, what="condition"):
    """Calls fn until it returns a truthy value; that value is returned. Fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except TestFailure:
            raise
        except Exception as e:  # a transient error is retried until the deadline
            last_error = e
        if time.monotonic() >= deadline:
            raise TestFailure(f"timed out after {timeout}s waiting for {what}"
                              + (f" (last error: {last_error!r})" if last_error else ""))
        time.sleep(interval)


class Proc:
    """A child process whose stdout lines are collected by a thread; stderr goes to a log file."""

    def __init__(self, name, argv, log_path, env=None):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.lines = queue.Queue()
        self.stdout = []
        self._log = open(log_path, "ab")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL,
                                  env=env, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.p.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stdout.append(line)
            self.lines.put(line)

    def wait_line(self, predicate, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TestFailure(f"{self.name}: no expected output line within {timeout}s; "
                                  f"stdout so far: {self.stdout!r}; log tail: {self.log_tail()}")
            try:
                line = self.lines.get(timeout=min(left, 0.2))
            except queue.Empty:
                if self.p.poll() is not None:
                    raise TestFailure(f"{self.name} exited with {self.p.returncode} before it was ready; "
                                      f"log tail: {self.log_tail()}")
                continue
            v = predicate(line)
            if v:
                return v

    def log_tail(self, n=15):
        try:
            with open(self.log_path, "rb") as f:
                lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines()
                         if '"msg":"access"' not in ln]
            return "\n".join(lines[-n:])
        except OSError:
            return ""

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL if it does not exit in time. Returns the exit code."""
        if self.p.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.p.wait(timeout=10)
        self._reader.join(timeout=5)
        self._log.close()
        return self.p.returncode


def url_after(prefix):
    def pick(line):
        i = line.find(prefix)
        if i < 0:
            return None
        rest = line[i + len(prefix):].strip()
        return rest.split()[0] if rest else None
    return pick


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.raw = raw
        try:
            self.body = json.loads(raw) if raw else None
        except ValueError:
            self.body = None

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return f"<HTTP {self.status} {self.raw[:400]!r}>"


class TlsFiles:
    """The files `hcprp --tls-dir DIR` creates on first start (src/tls/local_ca.h)."""

    def __init__(self, d):
        self.dir = d
        self.ca = os.path.join(d, "ca.pem")
        self.server_cert = os.path.join(d, "server.pem")
        self.server_key = os.path.join(d, "server-key.pem")
        self.client_cert = os.path.join(d, "client.pem")
        self.client_key = os.path.join(d, "client-key.pem")
        self.rp_cert = os.path.join(d, "rp-client.pem")
        self.rp_key = os.path.join(d, "rp-client-key.pem")
        self.control_token_file = os.path.join(d, "control-token")

    def ready(self):
        return os.path.exists(self.client_key) and os.path.exists(self.control_token_file)

    def context(self, cert, key):
        c = ssl.create_default_context(cafile=self.ca)
        c.load_cert_chain(cert, key)
        return c

    def arm_context(self):
        """What ARM presents: the client certificate the frontend trusts."""
        return self.context(self.client_cert, self.client_key)

    def rp_context(self):
        """What the resource provider presents to the Cluster Service."""
        return self.context(self.rp_cert, self.rp_key)

    def control_token(self):
        with open(self.control_token_file) as f:
            return f.readline().strip()

    def export_for_hcpctl(self):
        """hcpctl run by the tests (inheriting the environment) calls as ARM with these files."""
        os.environ["HCPCTL_CA"] = self.ca
        os.environ["HCPCTL_CERT"] = self.client_cert
        os.environ["HCPCTL_KEY"] = self.client_key


TLS = None  # TlsFiles of the running test's Ctx
CONTROL = {}  # Cluster Service URL -> URL of its /control listener


def http_request(method, url, body=None, headers=None, timeout=30, context=None):
    """One request; https URLs present ARM's client certificate unless `context` says otherwise."""
    if context is None and url.startswith("https://") and TLS is not None:
        context = TLS.arm_context()
    data = None
    hdrs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return Response(r.status, dict(r.headers), r.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as e:
        raw = e.read().decode("utf-8", "replace")
        return Response(e.code, dict(e.headers or {}), raw)


class Arm:
    """An ARM caller of one subscription: the identity headers ARM adds, the api-version."""

    def __init__(self, endpoint, subscription=None, tenant=None, client_id=None, resource_group="e2e-rg"):
        self.endpoint = endpoint.rstrip("/")
        self.subscription = subscription or str(uuid.uuid4())
        self.tenant = tenant or str(uuid.uuid4())
        self.client_id = client_id or str(uuid.uuid4())
        self.resource_group = resource_group

    def headers(self, extra=None):
        h = {"x-ms-home-tenant-id": self.tenant, "x-ms-client-object-id": self.client_id,
             "x-ms-correlation-request-id": str(uuid.uuid4())}
        h.update(extra or {})
        return h

    def url(self, path, api_version=API_VERSION):
        if path.startswith("http://") or path.startswith("https://"):
            return path
        sep = "&" if "?" in path else "?"
        return f"{self.endpoint}{path}{sep}api-version={urllib.parse.quote(api_version)}"

    def call(self, method, path, body=None, headers=None, api_version=API_VERSION, timeout=30):
        return http_request(method, self.url(path, api_version), body, self.headers(headers), timeout)

    def register(self, state="Registered"):
        body = {"state": state, "registrationDate": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
                "properties": {"tenantId": self.tenant, "registeredFeatures": []}}
        r = self.call("PUT", f"/subscriptions/{self.subscription}", body, api_version="2.0")
        expect(r.status in (200, 201), f"subscription PUT {state}: {r!r}")
        return r

    def rg_path(self):
        return f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"

    def cluster_path(self, name):
        return f"{self.rg_path()}{PROVIDER}/hcpOpenShiftClusters/{name}"

    def nodepool_path(self, cluster, name):
        return f"{self.cluster_path(cluster)}/nodePools/{name}"

    def cluster_body(self, name, pod_cidr="10.128.0.0/14", tags=None):
        sub = self.rg_path()
        vnet = f"{sub}/providers/Microsoft.Network/virtualNetworks/{name}-vnet"
        mi = f"{sub}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}-"
        cp_names = ["cluster-api-azure", "control-plane", "cloud-controller-manager", "ingress",
                    "disk-csi-driver", "file-csi-driver", "image-registry", "cloud-network-config"]
        cp = {n: mi + n for n in cp_names}
        uai = {v: {} for v in cp.values()}
        uai[mi + "service"] = {}
        body = {
            "location": "eastus",
            "identity": {"type": "UserAssigned", "userAssignedIdentities": uai},
            "properties": {
                "version": {"id": "4.20", "channelGroup": "stable"},
                "network": {"podCidr": pod_cidr, "serviceCidr": "172.30.0.0/16",
                            "machineCidr": "10.0.0.0/16", "hostPrefix": 23},
                "api": {"visibility": "Public"},
                "platform": {
                    "subnetId": f"{vnet}/subnets/workers",
                    "vnetIntegrationSubnetId": f"{vnet}/subnets/integration",
                    "networkSecurityGroupId": f"{sub}/providers/Microsoft.Network/networkSecurityGroups/{name}-nsg",
                    "operatorsAuthentication": {"userAssignedIdentities": {
                        "controlPlaneOperators": cp, "dataPlaneOperators": {},
                        "serviceManagedIdentity": mi + "service"}},
                },
            },
        }
        if tags:
            body["tags"] = tags
        return body

    def nodepool_body(self, cluster, replicas=2):
        vnet = f"{self.rg_path()}/providers/Microsoft.Network/virtualNetworks/{cluster}-vnet"
        return {"location": "eastus",
                "properties": {"version": {"id": "4.20.8", "channelGroup": "stable"},
                               "platform": {"vmSize": "Standard_D8s_v3", "subnetId": f"{vnet}/subnets/workers"},
                               "replicas": replicas}}

    def poll_operation(self, status_url, timeout=60, interval=0.05, on_status=None):
        """Polls an Azure-AsyncOperation URL until the status is terminal; returns (statuses seen, last body)."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            r = self.call("GET", status_url)
            expect_eq(r.status, 200, f"GET {status_url} ({r!r}) status code")
            status = r.body.get("status")
            if not seen or seen[-1] != status:
                seen.append(status)
                if on_status:
                    on_status(status, r)
            if status in TERMINAL:
                return seen, r.body
            if time.monotonic() > deadline:
                raise TestFailure(f"operation {status_url} not terminal after {timeout}s; statuses {seen}")
            time.sleep(interval)


class CsClient:
    """The Cluster Service (simulator) REST API over mutual TLS, and its /control API on the control
    listener with the bearer token."""

    def __init__(self, base):
        self.base = base.rstrip("/")

    def call(self, method, path, body=None):
        control = CONTROL.get(self.base)
        if path.startswith("/control") and control:
            return http_request(method, control + path, body,
                                {"Authorization": "Bearer " + TLS.control_token()})
        context = TLS.rp_context() if self.base.startswith("https://") else None
        return http_request(method, self.base + path, body, context=context)

    def clusters(self, subscription=None):
        q = ""
        if subscription:
            q = "?size=1000&search=" + urllib.parse.quote(f"azure.subscription_id = '{subscription}'")
        r = self.call("GET", f"{CS_PREFIX}/clusters{q}")
        expect_eq(r.status, 200, f"Cluster Service cluster list ({r!r})")
        return r.body

    def health(self):
        r = self.call("GET", "/control/health")
        expect_eq(r.status, 200, "simulator health")
        return r.body


class NotificationListener:
    """A local HTTP server that records the POSTs it receives."""

    def __init__(self, port=0):
        received = self.received = []
        cond = self.cond = threading.Condition()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode("utf-8", "replace")
                with cond:
                    received.append({"path": self.path, "headers": dict(self.headers), "raw": raw})
                    cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for item in self.received:
                    if predicate(item):
                        return item
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TestFailure(f"no matching notification within {timeout}s; received {self.received!r}")
                self.cond.wait(left)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Ctx:
    """Per-test resources: a temporary directory, processes and listeners, all released by close()."""

    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix=f"hcprp-e2e-{name}-")
        self.procs = []
        self.closers = []
        self.failed = False
        self.proxies = []
        global TLS
        TLS = self.tls = TlsFiles(self.path("tls"))
        CONTROL.clear()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def spawn(self, name, argv, env=None):
        p = Proc(name, argv, self.path(f"{name}-{len(self.procs)}.log"), env=env)
        self.procs.append(p)
        return p

    def capture(self, upstream):
        """A capturing proxy in front of the ARM endpoint `upstream`; returns the proxy's URL."""
        out = ARGS.traffic_dir or self.path("traffic")
        self.tls.export_for_hcpctl()
        proxy = CaptureProxy(upstream, out, f"{SCRIPT}-{self.name}-{len(self.proxies)}",
                             self.tls if upstream.startswith("https://") else None)
        self.proxies.append(proxy)
        self.closers.append(proxy.close)
        return proxy.url

    def serve(self, profile="instant", time_scale="1", extra=()):
        """hcprp serve with the simulator in process; returns (arm endpoint, Cluster Service URL, proc).
        The ARM endpoint is the capturing proxy in front of hcprp's."""
        data = self.path("serve")
        p = self.spawn("serve", [ARGS.hcprp, "serve", "--data-dir", data, "--listen", "127.0.0.1:0",
                                 "--retry-after", "1", "--profile", profile, "--time-scale", str(time_scale),
                                 "--tls-dir", self.tls.dir, *extra])
        arm = p.wait_line(url_after("ARM endpoint:"))
        cs = p.wait_line(url_after("Cluster Service:"))
        if "--clusters-service" not in extra:
            control = p.wait_line(url_after("simulator control:"))
            CONTROL[cs.rstrip("/")] = control[:-len("/control")]
        self.db = os.path.join(data, "hcprp.db")
        self.cs_url = cs
        return self.capture(arm), cs, p

    def clusters_service(self, profile="demo", time_scale="1"):
        d = self.path("cs")
        p = self.spawn("clusters-service", [ARGS.hcprp, "clusters-service", "--listen", "127.0.0.1:0",
                                            "--data-dir", d, "--profile", profile, "--time-scale", str(time_scale),
                                            "--tls-dir", self.tls.dir])
        url = p.wait_line(url_after("listening on"))
        control = p.wait_line(url_after("simulator control:"))
        CONTROL[url.rstrip("/")] = control[:-len("/control")]
        self.cs_url = url
        return url, p

    def frontend(self, store, cs_url, extra=()):
        p = self.spawn("frontend", [ARGS.hcprp, "frontend", "--store", store, "--clusters-service", cs_url,
                                    "--listen", "127.0.0.1:0", "--retry-after", "1", "--tls-dir", self.tls.dir,
                                    *extra])
        return self.capture(p.wait_line(url_after("listening on"))), p

    def backend(self, store, cs_url, extra=()):
        p = self.spawn("backend", [ARGS.hcprp, "backend", "--store", store, "--clusters-service", cs_url,
                                   "--tls-dir", self.tls.dir, *extra])
        p.wait_line(lambda line: "backend running" in line)
        return p

    def check(self, store=None, cs_url=None):
        """hcprp check against the store and Cluster Service; asserts exit 0 and returns the JSON report."""
        store = store or ("sqlite://" + self.db)
        cs_url = cs_url or self.cs_url
        r = subprocess.run([ARGS.hcprp, "check", "--store", store, "--clusters-service", cs_url,
                            "--gc-window-seconds", "0", "--json", "--tls-dir", self.tls.dir],
                           capture_output=True, timeout=120)
        out = r.stdout.decode("utf-8", "replace")
        expect(r.returncode == 0, f"hcprp check exited {r.returncode}: {out} {r.stderr.decode()[-2000:]}")
        return json.loads(out.strip().splitlines()[-1])

    def listener(self, port=0):
        n = NotificationListener(port)
        self.closers.append(n.close)
        return n

    def close(self):
        for c in self.closers:
            try:
                c()
            except Exception:
                pass
        for p in self.procs:
            rc = p.stop()
            if self.failed:
                print(f"--- {p.name} (exit {rc}) log tail:\n{p.log_tail(25)}", flush=True)
        if ARGS.keep or (self.failed and os.environ.get("HCPRP_E2E_KEEP")):
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_tests(tests, known_failures=()):
    """Runs `tests`. `known_failures` are tests of behaviour that is broken elsewhere in hcprp today: they
    are left out of the suite and run only with --known-failures (and then instead of `tests`)."""
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcprp", required=True)
    ap.add_argument("--hcpctl", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("-k", dest="only", help="run only tests whose name contains this")
    ap.add_argument("--shard", default="1/1", metavar="K/N",
                    help="run the K-th of N interleaved parts of the tests (CTest runs the parts side by side)")
    ap.add_argument("--known-failures", action="store_true",
                    help="run the tests left out of the suite because of known bugs")
    ap.add_argument("--traffic-dir", default=os.environ.get("HCPRP_E2E_TRAFFIC_DIR"),
                    help="where the ARM traffic is captured (oav format; this file's earlier captures there "
                         "are removed first); default: the test's temporary directory")
    ARGS = ap.parse_args()
    if ARGS.traffic_dir:
        ARGS.traffic_dir = os.path.abspath(ARGS.traffic_dir)
        os.makedirs(ARGS.traffic_dir, exist_ok=True)
        for f in os.listdir(ARGS.traffic_dir):
            if f.startswith(SCRIPT + "-"):
                os.remove(os.path.join(ARGS.traffic_dir, f))
    if ARGS.known_failures:
        tests = list(known_failures)
    ARGS.hcprp = os.path.abspath(ARGS.hcprp)
    ARGS.hcpctl = os.path.abspath(ARGS.hcpctl)
    shard, shards = (int(x) for x in ARGS.shard.split("/"))
    if not 1 <= shard <= shards:
        ap.error(f"--shard {ARGS.shard}: K must be between 1 and N")
    tests = tests[shard - 1::shards]
    passed = failed = 0
    for t in tests:
        if ARGS.only and ARGS.only not in t.__name__:
            continue
        ctx = Ctx(t.__name__)
        start = time.monotonic()
        print(f"=== {t.__name__}", flush=True)
        try:
            t(ctx)
            passed += 1
            print(f"--- PASS {t.__name__} ({time.monotonic() - start:.1f}s)", flush=True)
        except BaseException as e:  # KeyboardInterrupt too: the processes must still go
            failed += 1
            ctx.failed = True
            print(f"--- FAIL {t.__name__} ({time.monotonic() - start:.1f}s): {e}", flush=True)
            if not isinstance(e, TestFailure):
                traceback.print_exc()
            if isinstance(e, KeyboardInterrupt):
                ctx.close()
                break
        ctx.close()
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed or passed == 0 else 0)
