#!/usr/bin/env python3
"""Replays the real service's own frontend test cases (artifacts/, see README.md) against `hcprp serve`.

Each case runs against a fresh `hcprp serve` of its own (cases reuse subscription and resource names), a few
cases side by side. Every ARM request goes through the e2e harness's capturing proxy, so e2e_oav validates the
responses afterwards, and every case ends with `hcprp check`.

Exit status: 0 when every case outside EXPECTED_DIFFERENCES passes and every case in it still differs.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import e2e  # noqa: E402  (the shared end-to-end harness)

ARTIFACTS = os.path.join(HERE, "artifacts")
DEFAULT_API_VERSION = "2024-06-10-preview"
SUBSCRIPTION_API_VERSION = "2.0"
# Upstream's tests run in "fake-location"; hcprp serves only Azure region names, so the runner serves this one
# and reads upstream's location as it wherever it appears (bodies, expected documents, operation paths).
UPSTREAM_LOCATION = "fake-location"
LOCATION = "eastus"
PARALLEL_CASES = 4
MIN_PASS_PERCENT = 90
WAIT_SECONDS = 60

# The headers upstream's harness sends with every ARM request (its test tenant and identity URL).
UPSTREAM_HEADERS = {
    "X-Ms-Arm-Resource-System-Data": "{}",
    "X-Ms-Home-Tenant-Id": "00000000-0000-0000-0000-000000000000",
    "X-Ms-Identity-Url": "https://dummyhost.identity.azure.net/otherinformation?aqueryarg=somevalue",
    "Content-Type": "application/json",
}

# Every case that does not pass today, with why: the seeds decide otherwise, hcprp differs (not yet fixed),
# or the case needs database state a real deployment cannot be given. A case listed here that passes fails
# the run, so the list stays true: remove a case from it when hcprp is fixed.
EXPECTED_DIFFERENCES = {
    "Cluster/create-current":
        "seed decides otherwise: step 09 replaces the cluster with a body that repeats provisioningState "
        "'Accepted'; upstream's harness has no backend, so its stored state is still Accepted, while hcprp's "
        "backend has moved the cluster to Succeeded, and seed 002 makes a provisioningState other than the "
        "stored one a 400 (Forbidden: field is immutable)",
    "Cluster/missing-required-fields":
        "not yet fixed: empty strings where resource IDs belong: upstream says 'Required value' at subnetId, "
        "networkSecurityGroupId and the operator identities (and reports identity.type's enum at "
        "'identity.state'); hcprp reports them as malformed resource IDs, alone",
    "Cluster/update-reject-cluster-version-skew-patch":
        "cannot be replayed as it is: upstream judges a minor change against every active version of the "
        "cluster, two here, which the case loads into its database; hcprp judges the stored version and "
        "each node pool's, and a real deployment cannot be given those versions",
    "ExternalAuth/invalid-format":
        "not yet fixed: the published documents default a validation rule's type to RequiredClaim, which hcprp "
        "applies; upstream leaves it empty and refuses it (Unsupported value: \"\")",
    "ExternalAuth/missing-required-fields":
        "not yet fixed: upstream validates the zero values of left-out client fields (type \"\" unsupported, "
        "clientId \"\" not an audience, a left-out component 'Required value' at the component); hcprp "
        "reports each left-out field as 'Required value'",
}

HTTP_STEPS = ("httpCreate", "httpReplace", "httpPatch", "httpPost", "httpDelete", "httpGet", "httpList")

# Steps that act only on upstream's mock database or mock Cluster Service; a real deployment does what they
# stand in for itself (assigns Cluster Service ids, runs the backend, migrates its own store).
MOCK_ONLY_STEPS = ("setClusterServiceID", "loadClusterService", "cosmosCompare", "clusterServiceCompare",
                   "listActiveOperations", "syncClusterClusterServiceUpdateDispatch", "migrateCosmos",
                   "untypedGet", "untypedList", "untypedListRecursive", "kubernetesLoad", "kubernetesApply",
                   "kubernetesCompare")

# Documents a load step may pre-load without making the case depend on them: the state the backend reports
# about a cluster or node pool (active versions), which a real deployment's backend reports itself.
BACKEND_REPORTED_TYPES = ("serviceproviderclusters", "serviceprovidernodepools")

# ARM error codes whose HTTP status is fixed; any other expected error is only known to be a 4xx.
STATUS_OF_CODE = {"InvalidRequestContent": 400, "Conflict": 409, "NotFound": 404, "ResourceNotFound": 404}

TERMINAL_STATES = ("Succeeded", "Failed", "Canceled")


def localise(data):
    """Upstream's data with its test location replaced by the one served."""
    return data.replace(UPSTREAM_LOCATION.encode(), LOCATION.encode())


class StepFailure(Exception):
    """A difference that ends the case (what the next steps would see is no longer upstream's state)."""


# ---------------------------------------------------------------------------------------------- the data


class Step:
    def __init__(self, case_dir, entry):
        parts = entry.split("-", 2)
        self.index = int(parts[0])
        self.type = parts[1]
        self.name = parts[2][:-5] if parts[2].endswith(".json") else parts[2]
        self.label = entry
        self.path = os.path.join(case_dir, entry)
        self.files = sorted(os.listdir(self.path)) if os.path.isdir(self.path) else []

    def read(self, name):
        with open(os.path.join(self.path, name), "rb") as f:
            return localise(f.read())

    def json(self, name):
        return json.loads(self.read(name))

    def key(self):
        return self.json("00-key.json") if "00-key.json" in self.files else {}

    def resource_id(self):
        key = self.key()
        return key.get("resourceID") or key.get("resourceId")

    def api_version(self):
        return self.key().get("apiVersion") or DEFAULT_API_VERSION

    def bodies(self):
        """The request bodies: every .json but the key, in name order."""
        return [self.read(f) for f in self.files if f.endswith(".json") and f != "00-key.json"]

    def documents(self):
        return [json.loads(b) for b in self.bodies()]

    def expected_error(self):
        if "expected-error.txt" not in self.files:
            return ""
        return self.read("expected-error.txt").decode().strip()


def portability(steps):
    """None when the case can run over HTTP, else why not: a load step whose documents are more than what a
    backend reports comes before an HTTP step, so the answers checked depend on pre-loaded database state."""
    last_http = max((s.index for s in steps if s.type in HTTP_STEPS), default=-1)
    if last_http < 0:
        return "no HTTP step: it exercises upstream's database alone"
    for s in steps:
        if s.type not in ("load", "loadCosmos") or s.index > last_http:
            continue
        for doc in s.documents():
            kind = str(doc.get("resourceType", "")).lower()
            if not kind.endswith(BACKEND_REPORTED_TYPES):
                return f"step {s.label} pre-loads database documents ({kind or 'untyped'}) the HTTP steps read"
    return None


class Case:
    def __init__(self, name, directory, kind):
        self.name = name
        self.dir = directory
        self.kind = kind  # "crud" or "compliance"
        self.steps = []
        self.not_portable = None
        if kind == "crud":
            entries = [e for e in os.listdir(directory) if re.match(r"^\d+-[A-Za-z]+-", e)]
            self.steps = sorted((Step(directory, e) for e in entries), key=lambda s: s.index)
            self.not_portable = portability(self.steps)


def discover():
    cases = []
    crud = os.path.join(ARTIFACTS, "FrontendCRUD")
    for group in sorted(os.listdir(crud)):
        for name in sorted(os.listdir(os.path.join(crud, group))):
            cases.append(Case(f"{group}/{name}", os.path.join(crud, group, name), "crud"))
    compliance = os.path.join(ARTIFACTS, "VersionCompliance")
    for group in sorted(os.listdir(compliance)):
        if not os.path.isdir(os.path.join(compliance, group)):
            continue
        for name in sorted(os.listdir(os.path.join(compliance, group))):
            d = os.path.join(compliance, group, name)
            if os.path.exists(os.path.join(d, "scenario.json")):
                cases.append(Case(f"VersionCompliance/{group}/{name}", d, "compliance"))
    return cases


# --------------------------------------------------------------------------------------- the comparisons

_PAIR = re.compile(r'"(code|message|target)":\s*"((?:[^"\\]|\\.)*)("?)')


def expected_problems(text):
    """The problems an expected-error.txt names, as upstream's harness splits it: one chunk per error object,
    each a list of (field, value, complete) where an unterminated value is a prefix. A chunk without these
    fields is plain text the response body must contain. A whole ARM error document names its error and
    each detail."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("error"), dict):
        # A whole ARM error document: the error and each of its details is one problem.
        error = whole["error"]
        return [[(f, str(node[f]), True) for f in ("code", "message", "target") if f in node]
                for node in [error, *(error.get("details") or [])] if isinstance(node, dict)]
    chunks = re.split(r"\}\s*,?\s*\n\s*\{", text)
    out = []
    for chunk in chunks:
        pairs = [(m.group(1), json.loads('"' + m.group(2) + '"'), m.group(3) == '"')
                 for m in _PAIR.finditer(chunk)]
        out.append(pairs or chunk.strip())
    return out


def actual_problems(body):
    """The ARM error and every detail below it."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "code" in node or "message" in node:
                found.append(node)
            for d in node.get("details") or []:
                walk(d)

    if isinstance(body, dict):
        walk(body.get("error", body))
    return found


def problem_matches(pairs, problem):
    for field, value, complete in pairs:
        got = problem.get(field)
        if not isinstance(got, str):
            return False
        if (got != value) if complete else not got.startswith(value):
            return False
    return True


def describe(pairs):
    return ", ".join(f"{f}={v!r}{'' if c else '...'}" for f, v, c in pairs)


def compare_error(text, resp):
    """Differences between upstream's expected error and the response, [] when it matches."""
    diffs = []
    problems = expected_problems(text)
    codes = {v for p in problems if isinstance(p, list) for f, v, _ in p if f == "code"}
    known = {STATUS_OF_CODE[c] for c in codes if c in STATUS_OF_CODE}
    if not 400 <= resp.status < 500:
        diffs.append(f"status: expected 4xx{' (' + str(sorted(known)[0]) + ')' if len(known) == 1 else ''}, "
                     f"got {resp.status}")
        return diffs
    if len(known) == 1 and resp.status not in known:
        diffs.append(f"status: expected {known.pop()}, got {resp.status}")
    actual = actual_problems(resp.body)
    indented = json.dumps(resp.body, indent=2, ensure_ascii=False) if resp.body is not None else resp.raw
    for p in problems:
        if isinstance(p, str):
            if p not in indented and p not in resp.raw:
                diffs.append(f"body lacks {p!r}")
        elif not any(problem_matches(p, a) for a in actual):
            diffs.append(f"missing problem {describe(p)}")
    if diffs:
        diffs.append("actual problems: " + "; ".join(
            f"code={a.get('code')!r}, message={a.get('message')!r}, target={a.get('target')!r}" for a in actual))
    return diffs


def _ignored(path, expected_value):
    """Fields of an expected document a real deployment cannot reproduce (README.md says why)."""
    if path in (("systemData", "createdAt"), ("systemData", "lastModifiedAt")):
        return True
    if path == ("properties", "provisioningState") and expected_value not in TERMINAL_STATES:
        return True
    return False


def compare_document(expected, actual, path=()):
    """The fields `expected` gives that `actual` lacks or has otherwise, as 'path: expected X, got Y'."""
    if _ignored(path, expected):
        return []
    where = ".".join(path) or "(document)"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual)}"]
        out = []
        for k, v in expected.items():
            if k not in actual:
                if not _ignored(path + (k,), v):
                    out.append(f"{'.'.join(path + (k,))}: expected {json.dumps(v)}, missing")
            else:
                out.extend(compare_document(v, actual[k], path + (k,)))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(compare_document(e, a, path + (f"[{i}]",)))
        return out
    if expected != actual:
        return [f"{where}: expected {json.dumps(expected)}, got {json.dumps(actual)}"]
    return []


def compare_operation_status(expected, actual):
    """Operation documents: their ids and times are generated, so only the rest is compared."""
    trimmed = {k: v for k, v in expected.items()
               if k not in ("id", "name", "resourceId", "startTime", "endTime", "operationId")}
    return compare_document(trimmed, actual)


# ------------------------------------------------------------------------------------------ the replay


class Replay:
    """One case against one `hcprp serve`."""

    def __init__(self, ctx, endpoint):
        self.endpoint = endpoint.rstrip("/")
        self.tls = ctx.tls.arm_context()
        self.log = []  # (step label, [differences])
        self.skipped = 0

    def request(self, method, path, api_version, body=None):
        sep = "&" if "?" in path else "?"
        url = f"{self.endpoint}{path}{sep}api-version={api_version}"
        return e2e.http_request(method, url, body, dict(UPSTREAM_HEADERS), timeout=30, context=self.tls)

    @staticmethod
    def is_subscription(rid):
        return re.fullmatch(r"/subscriptions/[^/]+", rid, re.I) is not None

    def put(self, rid, api_version, body):
        if self.is_subscription(rid):
            return self.request("PUT", rid, SUBSCRIPTION_API_VERSION, body)
        return self.request("PUT", rid, api_version, body)

    def wait_terminal(self, rid, api_version=DEFAULT_API_VERSION):
        """Until the resource's provisioningState is terminal. A resource that cannot be read (gone, or named
        under a subscription the case never registered, as some of upstream's keys are) has nothing to wait
        for: upstream's harness completes operations in its database whatever the resource."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            r = self.request("GET", rid, api_version)
            if 400 <= r.status < 500:
                return None
            state = ((r.body or {}).get("properties") or {}).get("provisioningState")
            if r.status == 200 and state in TERMINAL_STATES:
                return state
            if time.monotonic() > deadline:
                raise StepFailure(f"{rid}: still {state or r.status} after {WAIT_SECONDS}s")
            time.sleep(0.1)

    def wait_gone(self, rid):
        deadline = time.monotonic() + WAIT_SECONDS
        while self.request("GET", rid, DEFAULT_API_VERSION).status != 404:
            if time.monotonic() > deadline:
                raise StepFailure(f"{rid}: not gone after {WAIT_SECONDS}s")
            time.sleep(0.1)

    def writes(self, step, method):
        """PUT/PATCH/POST each body in turn, as upstream does: with an expected error, the first answer must
        carry it; without, every answer must be a success."""
        rid, version, expected_error = step.resource_id(), step.api_version(), step.expected_error()
        bodies = step.bodies() or [None]
        for body in bodies:
            if method == "PUT":
                r = self.put(rid, version, body)
            else:
                r = self.request(method, rid, version, body)
            if expected_error:
                return self.error_result(step, method, rid, expected_error, r)
            if not 200 <= r.status < 300:
                raise StepFailure(self.headline(step, method, rid) + f": expected success, got {r.status} "
                                  f"{summarise_error(r)}")
        return []

    @staticmethod
    def headline(step, method, rid):
        return f"{step.label}: {method} {short(rid)}"

    def error_result(self, step, method, rid, expected_error, r):
        diffs = compare_error(expected_error, r)
        if diffs:
            raise StepFailure(self.headline(step, method, rid) + ": " + " | ".join(diffs))
        return []

    def get(self, step):
        rid, version = step.resource_id(), step.api_version()
        if "/hcpoperationstatuses/" in rid.lower():
            idx = rid.lower().index("/hcpoperationstatuses/")
            rid = f"{rid[:idx]}/locations/{LOCATION}{rid[idx:]}"
        r = self.request("GET", rid, version)
        expected_error = step.expected_error()
        if expected_error:
            return self.error_result(step, "GET", rid, expected_error, r)
        if r.status != 200:
            raise StepFailure(f"{step.label}: GET {short(rid)}: expected 200, got {r.status} {summarise_error(r)}")
        docs = step.documents()
        if "/hcpoperationstatuses/" in rid.lower():
            return compare_operation_status(docs[0], r.body)
        return compare_document(docs[0], r.body)

    def list(self, step):
        rid, version = step.resource_id(), step.api_version()
        collection = rid[:rid.rindex("/")]
        r = self.request("GET", collection, version)
        if r.status != 200:
            raise StepFailure(f"{step.label}: GET {short(collection)}: expected 200, got {r.status} "
                              f"{summarise_error(r)}")
        return compare_list(step.documents(), (r.body or {}).get("value") or [])

    def run_step(self, step):
        t = step.type
        if t in ("httpCreate", "httpReplace"):
            return self.writes(step, "PUT")
        if t == "httpPatch":
            return self.writes(step, "PATCH")
        if t == "httpPost":
            return self.writes(step, "POST")
        if t == "httpDelete":
            rid = step.resource_id()
            r = self.request("DELETE", rid, step.api_version())
            if step.expected_error():
                return self.error_result(step, "DELETE", rid, step.expected_error(), r)
            if not 200 <= r.status < 300:
                raise StepFailure(f"{step.label}: DELETE {short(rid)}: expected success, got {r.status} "
                                  f"{summarise_error(r)}")
            return []
        if t == "httpGet":
            return self.get(step)
        if t == "httpList":
            return self.list(step)
        if t == "completeOperation":
            self.wait_terminal(step.resource_id())
            return []
        if t == "untypedDelete":
            # Upstream removes the document its absent backend would remove; here the backend does it.
            self.wait_gone(step.resource_id())
            return []
        self.skipped += 1
        return None

    def run_crud(self, case):
        for step in case.steps:
            try:
                diffs = self.run_step(step)
            except StepFailure as e:
                self.log.append((step.label, [str(e)]))
                return
            if diffs:
                self.log.append((step.label, diffs))

    def run_compliance(self, case):
        scenario = json.load(open(os.path.join(case.dir, "scenario.json")))
        version = scenario["createVersion"]
        rid = scenario["resourceID"]
        root = os.path.dirname(os.path.dirname(case.dir))
        creates = [("subscription", "/subscriptions/" + rid.split("/")[2],
                    os.path.join(root, "subscription.json"))]
        if scenario.get("clusterResourceID"):
            creates.append(("cluster", scenario["clusterResourceID"], os.path.join(case.dir, "cluster.json")))
        creates.append(("resource", rid, os.path.join(case.dir, "request.json")))
        for label, target, path in creates:
            with open(path, "rb") as f:
                r = self.put(target, version, localise(f.read()))
            if not 200 <= r.status < 300:
                self.log.append((f"create {label}", [f"PUT {short(target)}: expected success, got {r.status} "
                                                     f"{summarise_error(r)}"]))
                return
            if label != "subscription":
                self.wait_terminal(target, version)
        for kind in ("get", "list"):
            for name in sorted(os.listdir(os.path.join(case.dir, "expected", kind))):
                v = name[:-5]
                with open(os.path.join(case.dir, "expected", kind, name), "rb") as f:
                    expected = json.loads(localise(f.read()))
                target = rid if kind == "get" else rid[:rid.rindex("/")]
                r = self.request("GET", target, v)
                if r.status != 200:
                    self.log.append((f"{kind} {v}", [f"GET {short(target)}: expected 200, got {r.status} "
                                                     f"{summarise_error(r)}"]))
                    continue
                actual = r.body if kind == "get" else (r.body or {}).get("value") or []
                if kind == "list":
                    if len(actual) != 1:
                        self.log.append((f"list {v}", [f"expected 1 item, got {len(actual)}"]))
                        continue
                    actual = actual[0]
                diffs = compare_document(expected, actual)
                if diffs:
                    self.log.append((f"{kind} {v}", diffs))


def compare_list(expected_docs, actual_docs):
    if len(expected_docs) != len(actual_docs):
        return [f"expected {len(expected_docs)} items, got {len(actual_docs)}: "
                f"{[a.get('name') for a in actual_docs]}"]
    out = []
    for e in expected_docs:
        candidates = [a for a in actual_docs if a.get("name") == e.get("name")] or actual_docs
        best = min((compare_document(e, a) for a in candidates), key=len)
        out.extend(f"item {e.get('name')}: {d}" for d in best)
    return out


def short(rid):
    return re.sub(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.RedHatOpenShift/", ".../",
                  rid, flags=re.I)


def summarise_error(r):
    problems = actual_problems(r.body)
    if not problems:
        return r.raw[:300]
    return "; ".join(f"{p.get('code')}: {p.get('message')} [{p.get('target')}]" for p in problems[:6])


# ------------------------------------------------------------------------------------------ the outcome


class Outcome:
    def __init__(self, case, status, detail="", log=(), skipped=0, seconds=0.0):
        self.case = case
        self.status = status  # PASS, FAIL, LISTED-DIFFERENT, LISTED-PASSES, NOT-PORTABLE
        self.detail = detail
        self.log = list(log)
        self.skipped = skipped
        self.seconds = seconds


def ctx_name(case_name):
    return re.sub(r"[^A-Za-z0-9]+", "-", case_name).strip("-")


def run_case(case):
    start = time.monotonic()
    ctx = e2e.Ctx(ctx_name(case.name))
    replay = None
    try:
        endpoint, _, _ = ctx.serve(profile="instant", extra=("--location", LOCATION))
        replay = Replay(ctx, endpoint)
        if case.kind == "crud":
            replay.run_crud(case)
        else:
            replay.run_compliance(case)
        try:
            ctx.check()
        except e2e.TestFailure as e:
            replay.log.append(("hcprp check", [str(e)[:500]]))
    except BaseException as e:  # a harness error is this case's failure, not the run's end
        ctx.failed = True
        log = (replay.log if replay else []) + [("harness", [f"{type(e).__name__}: {e}",
                                                             traceback.format_exc(limit=3)])]
        return Outcome(case, "FAIL", log=log, seconds=time.monotonic() - start)
    finally:
        ctx.close()
    listed = EXPECTED_DIFFERENCES.get(case.name)
    failed = bool(replay.log)
    status = {(False, False): "PASS", (True, False): "FAIL",
              (True, True): "LISTED-DIFFERENT", (False, True): "LISTED-PASSES"}[(failed, listed is not None)]
    return Outcome(case, status, listed or "", replay.log, replay.skipped, time.monotonic() - start)


def print_outcome(o, verbose):
    line = f"{o.status:17} {o.case.name}"
    if o.status == "NOT-PORTABLE":
        line += f": {o.detail}"
    elif o.status == "LISTED-DIFFERENT":
        line += f": {o.detail}"
    elif o.status == "LISTED-PASSES":
        line += f": passes now; remove it from EXPECTED_DIFFERENCES ({o.detail})"
    elif o.status == "FAIL" and o.log:
        label, diffs = o.log[0]
        line += f": {diffs[0][:300] if diffs[0].startswith(label) else label + ': ' + diffs[0][:300]}"
    if o.status != "NOT-PORTABLE":
        line += f" ({o.seconds:.1f}s, {o.skipped} mock-only steps skipped)"
    print(line, flush=True)
    if verbose or o.status == "FAIL":
        for label, diffs in o.log:
            for d in diffs:
                print(f"    {d}" if d.startswith(label) else f"    {label}: {d}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hcprp", required=True)
    ap.add_argument("--hcpctl", help="unused; accepted like every end-to-end test")
    ap.add_argument("--traffic-dir", default=os.environ.get("HCPRP_E2E_TRAFFIC_DIR"),
                    help="where the ARM traffic is captured (oav format); default: each case's temporary folder")
    ap.add_argument("-k", dest="only", help="run only cases whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--verbose", action="store_true", help="print every difference of every case")
    ap.add_argument("--json", dest="json_out", metavar="FILE",
                    help="also write every case's outcome and differences to FILE (JSON)")
    ap.add_argument("-j", dest="jobs", type=int, default=PARALLEL_CASES, help="cases run side by side")
    args = ap.parse_args()
    e2e.SCRIPT = "upstream"
    e2e.ARGS = argparse.Namespace(hcprp=os.path.abspath(args.hcprp), keep=args.keep, traffic_dir=None)
    if args.traffic_dir:
        e2e.ARGS.traffic_dir = os.path.abspath(args.traffic_dir)
        os.makedirs(e2e.ARGS.traffic_dir, exist_ok=True)
        for f in os.listdir(e2e.ARGS.traffic_dir):
            if f.startswith(e2e.SCRIPT + "-"):
                os.remove(os.path.join(e2e.ARGS.traffic_dir, f))

    cases = [c for c in discover() if not args.only or args.only in c.name]
    unknown = sorted(set(EXPECTED_DIFFERENCES) - {c.name for c in discover()})
    outcomes = [Outcome(c, "NOT-PORTABLE", c.not_portable) for c in cases if c.not_portable]
    for o in outcomes:
        print_outcome(o, args.verbose)
    runnable = [c for c in cases if not c.not_portable]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for o in pool.map(run_case, runnable):
            print_outcome(o, args.verbose)
            outcomes.append(o)

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({o.case.name: {"status": o.status, "reason": o.detail, "differences": o.log}
                       for o in outcomes}, f, indent=1)
    count = {s: sum(1 for o in outcomes if o.status == s) for s in
             ("PASS", "FAIL", "LISTED-DIFFERENT", "LISTED-PASSES", "NOT-PORTABLE")}
    portable = len(runnable)
    share = 100.0 * count["PASS"] / portable if portable else 0.0
    print(f"upstream cases: {portable} portable, {count['PASS']} pass ({share:.1f}%), "
          f"{count['LISTED-DIFFERENT']} listed, {count['NOT-PORTABLE']} not portable"
          + (f", {count['FAIL']} FAILED unlisted" if count["FAIL"] else "")
          + (f", {count['LISTED-PASSES']} listed but passing" if count["LISTED-PASSES"] else ""), flush=True)
    for name in unknown:
        print(f"EXPECTED_DIFFERENCES names no case: {name}")
    # The share the project holds itself to (a whole run only: -k selects cases).
    below_floor = not args.only and share < MIN_PASS_PERCENT
    if below_floor:
        print(f"fewer than {MIN_PASS_PERCENT}% of the portable cases pass")
    bad = count["FAIL"] or count["LISTED-PASSES"] or (unknown and not args.only) or not runnable or below_floor
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
