"""Create/delete load through several frontends, a change-feed reader, and the checks that nothing
acknowledged was lost; shared by the failover tests (failover.py) and the benchmark (bench/pg_ha).

WriteLoad: worker threads, each creating clusters under new names and deleting the one it created
before (often while that one still provisions), through the frontends in turn. A 503 (or a refused
connection) is retried with the same request until another answer comes, as an ARM client does; every
request is recorded with its start and end time. A create whose first attempt answered 503 may have
committed (the COMMIT's answer was lost): its retry then finds the resource and answers 409 (the
create still runs) or 200 (it ended), never a second 201, and never a second Cluster Service object.

verify(): every acknowledged operation ends (creates Succeeded or Canceled by the delete that
followed them, deletes Succeeded), every name ends present and Succeeded or absent as the
acknowledged requests say, and the Cluster Service holds exactly one cluster per present name and
never two for one name. A cluster whose internal ID could not be recorded (the COMMIT answer of that
write was lost) and that was deleted before the backend's create recovery stays in the Cluster
Service until the backend's orphan collector removes it (--gc-window-seconds): reported, not a
failure.

FeedReader: reads the store's change feed as the PostgreSQL engine's readers do (number_changes,
then the numbered changes past its position), through the same multi-host URL, and remembers the
serial of the change that each number gave. It fails on a gap, on a change delivered twice, and on a
number that the server later maps to another change (checked across failovers by recheck()). A server
whose feed ends before the reader's position is one that has not received what the reader read on
another: a healed old primary that still takes read-write sessions until its keeper demotes it. Such a
read is counted (behind_reads) and skipped, as the store's readers resync from it; recheck() then finds
any number the final primary lost or gave to another change.
"""

import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

from e2e import TERMINAL, Arm, CsClient, TestFailure, expect, expect_eq, wait_until  # noqa: E402

WRITE_ACK = (200, 201, 202)


class Request:
    __slots__ = ("method", "name", "start", "end", "status", "async_url", "attempt")

    def __init__(self, method, name, start, end, status, async_url, attempt):
        self.method, self.name, self.start, self.end = method, name, start, end
        self.status, self.async_url, self.attempt = status, async_url, attempt


class WriteLoad:
    def __init__(self, arms, workers=4, prefix="w", pause=0.02, retry_pause=0.2):
        self.arms = arms  # one Arm per frontend, the same caller
        self.workers = workers
        self.prefix = prefix
        self.pause = pause
        self.retry_pause = retry_pause
        self.requests = []  # every answer, in completion order
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.failures = []
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(workers)]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=120)
            expect(not t.is_alive(), "a load thread did not stop")
        if self.failures:
            raise self.failures[0]

    def _call(self, i, method, name, body):
        """Sends until an answer other than 503 (or the stop, after a last try); records each answer."""
        attempt = 0
        while True:
            arm = self.arms[(i + attempt) % len(self.arms)]
            start = time.monotonic()
            try:
                r = arm.call(method, arm.cluster_path(name), body, timeout=40)
                status, url = r.status, r.header("Azure-AsyncOperation")
                retry_after = r.header("Retry-After")
                if status == 503:
                    expect(retry_after is not None and retry_after.isdigit(),
                           f"{method} {name}: 503 without Retry-After ({r!r})")
                    expect(isinstance(r.body, dict) and r.body.get("error", {}).get("code") == "ServiceUnavailable",
                           f"{method} {name}: 503 without the ServiceUnavailable body ({r!r})")
            except OSError:  # the frontend itself is never down here: a reset is a failure
                raise
            end = time.monotonic()
            with self.lock:
                self.requests.append(Request(method, name, start, end, status, url, attempt))
            if status != 503:
                return status
            attempt += 1
            if self.stop_flag.is_set() and attempt > 50:
                return status
            time.sleep(self.retry_pause)

    def _run(self, i):
        try:
            n = 0
            previous = None
            while not self.stop_flag.is_set():
                name = f"{self.prefix}{i}x{n:04d}"
                n += 1
                status = self._call(i, "PUT", name, self.arms[0].cluster_body(name))
                expect(status in (201, 200, 409), f"PUT {name}: unexpected {status}")
                if previous is not None:
                    status = self._call(i, "DELETE", previous, None)
                    expect(status in (202, 204, 409), f"DELETE {previous}: unexpected {status}")
                previous = name
                time.sleep(self.pause)
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.failures.append(e)

    # -- figures ----------------------------------------------------------------------------------

    def acked_writes(self):
        with self.lock:
            return [r for r in self.requests if r.status in WRITE_ACK]

    def count(self, status):
        with self.lock:
            return sum(1 for r in self.requests if r.status == status)

    def unavailability(self, fault_at, settled_at):
        """The longest time without an acknowledged write around a fault: from the last write
        acknowledged before `fault_at` to the first sent after `settled_at` (the new primary known),
        the widest gap between two successive acknowledgements. Returns (gap start, gap end, seconds)
        in monotonic time."""
        acked = self.acked_writes()
        before = [r.end for r in acked if r.end <= fault_at]
        after = [r.end for r in acked if r.start >= settled_at]
        expect(before, "no write was acknowledged before the fault")
        expect(after, "no write was acknowledged after the fault")
        lo, hi = max(before), min(after)
        ends = sorted(r.end for r in acked if lo <= r.end <= hi)
        start, end = max(zip(ends, ends[1:]), key=lambda p: p[1] - p[0])
        return start, end, end - start

    def wait_acked_after(self, t, n=3, timeout=120):
        wait_until(lambda: sum(1 for r in self.acked_writes() if r.start >= t) >= n, timeout=timeout,
                   interval=0.1, what=f"{n} writes acknowledged after the fault")

    # -- checks -----------------------------------------------------------------------------------

    def verify(self, cs_url, timeout=180):
        """Every acknowledged operation present and terminal; names end as the answers say; one
        Cluster Service cluster per present name, none twice. Returns (acknowledged operations,
        names, names deleted whose Cluster Service cluster awaits the orphan collector)."""
        arm = self.arms[0]
        with self.lock:
            requests = list(self.requests)
        by_name = {}
        for r in requests:
            by_name.setdefault(r.name, []).append(r)
        acked_ops = 0
        for name, rs in sorted(by_name.items()):
            deleted = any(r.method == "DELETE" and r.status in (202, 204) for r in rs)
            for r in rs:
                if r.status not in WRITE_ACK or not r.async_url:
                    continue
                acked_ops += 1
                try:
                    seen, final = arm.poll_operation(r.async_url, timeout=timeout, interval=0.2)
                except TestFailure as e:
                    raise TestFailure(f"{r.method} {name} (answered {r.status}): {e}") from e
                allowed = ("Succeeded", "Canceled") if r.method == "PUT" and deleted else ("Succeeded",)
                expect(seen[-1] in allowed, f"{r.method} {name} ended {seen[-1]} ({final})")
            g = arm.call("GET", arm.cluster_path(name))
            if deleted:
                expect_eq(g.status, 404, f"GET {name} after its acknowledged delete")
                continue
            created = any(r.method == "PUT" and r.status in WRITE_ACK + (409,) for r in rs)
            if created:
                expect_eq(g.status, 200, f"GET {name}, whose create was acknowledged ({g!r})")
            else:
                expect(g.status in (200, 404), f"GET {name} after only 503s on its PUT: {g!r}")
            if g.status == 200:
                wait_until(lambda: arm.call("GET", arm.cluster_path(name)).body["properties"]
                           ["provisioningState"] in TERMINAL, timeout=timeout, interval=0.2,
                           what=f"{name} to reach a terminal state")
                state = arm.call("GET", arm.cluster_path(name)).body["properties"]["provisioningState"]
                expect_eq(state, "Succeeded", f"{name} final provisioningState")
        # The Cluster Service: exactly one cluster per present name, never two for a name.
        present = {n for n in by_name if arm.call("GET", arm.cluster_path(n)).status == 200}
        state = {}

        def settled():
            names = self._cs_names(cs_url)
            state["names"] = names
            dup = {n for n in names if names.count(n) > 1}
            expect(not dup, f"Cluster Service clusters created twice: {sorted(dup)}")
            return all(names.count(n) == 1 for n in present) and all(
                n in present or n in deleted_names(by_name) for n in names)
        try:
            wait_until(settled, timeout=timeout, interval=0.5,
                       what="the Cluster Service to hold exactly one cluster per present name")
        except TestFailure as e:
            names = state.get("names", [])
            raise TestFailure(f"{e}: missing {sorted(n for n in present if n not in names)}, "
                              f"unknown {sorted(n for n in names if n not in by_name)}") from e
        # A create whose internal ID could not be recorded (its COMMIT answer lost) and that was
        # deleted before the backend's create recovery leaves its Cluster Service cluster to the
        # backend's orphan collector (after --gc-window-seconds).
        orphans = sorted(n for n in state["names"] if n not in present)
        return acked_ops, len(by_name), orphans

    def _cs_names(self, cs_url):
        items = CsClient(cs_url).clusters(self.arms[0].subscription).get("items", [])
        return [item.get("name") for item in items]


def deleted_names(by_name):
    return {n for n, rs in by_name.items() if any(r.method == "DELETE" and r.status in (202, 204) for r in rs)}


class FeedReader:
    """Reads the `resources` change feed of a store schema over psql, as the store's readers do."""

    def __init__(self, psql, url, schema="hcprp", container="resources"):
        self.psql = psql
        self.url = url  # a libpq URL (multi-host, read-write sessions)
        self.schema = schema
        self.container = container
        self.position = None
        self.seen = {}  # sequence number -> serial of the change it named
        self.serials = set()
        self.reads = 0
        self.errors = 0
        self.behind_reads = []  # (server port, its feed's end, the reader's position)

    def _sql(self, sql):
        """The query's output, or None when it failed or did not answer within 20 s (a server cut off
        by a partition leaves a session waiting)."""
        try:
            r = subprocess.run([self.psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.url, "-c", sql],
                               capture_output=True, stdin=subprocess.DEVNULL, timeout=20)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        return r.stdout.decode().strip()

    def read_once(self):
        """One read (numbering first); False when the server could not be reached."""
        c = f"'\\x{self.container.encode().hex()}'::bytea"
        out = self._sql(f"SET search_path={self.schema}; SELECT inet_server_port(), number_changes({c}, 5000)")
        if out is None:
            self.errors += 1
            return False
        port, last = (int(x) for x in out.splitlines()[-1].split("|"))
        if self.position is None:
            self.position = last
            return True
        if last < self.position:
            self.behind_reads.append((port, last, self.position))
            return False
        out = self._sql(f"SET search_path={self.schema}; SELECT seq, serial FROM changes "
                        f"WHERE container={c} AND seq > {self.position} ORDER BY seq LIMIT 5000")
        if out is None:
            self.errors += 1
            return False
        self.reads += 1
        for line in out.splitlines():
            seq, serial = (int(x) for x in line.split("|"))
            expect_eq(seq, self.position + 1, "the next change feed number (a gap or a repeat)")
            expect(serial not in self.serials, f"change serial {serial} delivered twice (number {seq})")
            self.seen[seq] = serial
            self.serials.add(serial)
            self.position = seq
        return True

    def behind(self):
        """The reads skipped because the server's feed ended before the reader's position, in words."""
        if not self.behind_reads:
            return "no read from a server behind the reader"
        ports = sorted({p for p, _, _ in self.behind_reads})
        worst = max(pos - last for _, last, pos in self.behind_reads)
        return (f"{len(self.behind_reads)} reads skipped from a server behind the reader (port {ports}, "
                f"at most {worst} numbers behind)")

    def recheck(self):
        """Every number read so far still names the same change on the current primary."""
        out = self._sql(f"SET search_path={self.schema}; SELECT seq, serial FROM changes "
                        f"WHERE container='\\x{self.container.encode().hex()}'::bytea AND seq IS NOT NULL")
        expect(out is not None, "the feed could not be read for the recheck")
        now = {}
        for line in out.splitlines():
            seq, serial = (int(x) for x in line.split("|"))
            now[seq] = serial
        for seq, serial in self.seen.items():
            expect_eq(now.get(seq), serial, f"the change numbered {seq} after the failover")
        return len(self.seen)


class FeedThread:
    """Runs a FeedReader in a loop (every `interval` seconds) until stopped."""

    def __init__(self, reader, interval=0.1):
        self.reader = reader
        self.interval = interval
        self.stop_flag = threading.Event()
        self.failure = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()

    def _run(self):
        try:
            while not self.stop_flag.is_set():
                self.reader.read_once()
                time.sleep(self.interval)
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.failure = e

    def stop(self):
        self.stop_flag.set()
        self.thread.join(timeout=60)
        if self.failure:
            raise self.failure
        # Everything committed is read (the feed ends where the store's numbering ends).
        wait_until(lambda: self.reader.read_once() and self._caught_up(), timeout=60, interval=0.2,
                   what="the feed reader to catch up")

    def _caught_up(self):
        c = f"'\\x{self.reader.container.encode().hex()}'::bytea"
        last = self.reader._sql(f"SET search_path={self.reader.schema}; SELECT number_changes({c}, 5000)")
        return last is not None and int(last.splitlines()[-1]) == self.reader.position


def make_arms(endpoints, subscription=None):
    first = Arm(endpoints[0], subscription=subscription, resource_group="ha-rg")
    arms = [first] + [Arm(e, subscription=first.subscription, tenant=first.tenant, client_id=first.client_id,
                          resource_group="ha-rg") for e in endpoints[1:]]
    return arms
