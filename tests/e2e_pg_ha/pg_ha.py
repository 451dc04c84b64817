"""A throwaway PostgreSQL high-availability group run by pg_auto_failover, for the HA tests.

PgHaCluster starts a pg_auto_failover monitor, then a primary and a standby (`pg_autoctl create
postgres`), each a `pg_autoctl run` process in its own temporary directory on a free port,
as the "postgres" user when the tests run as root (PostgreSQL refuses root). pg_autoctl's own
configuration and state go to the temporary directory too (XDG_CONFIG_HOME, XDG_DATA_HOME), so
nothing is left behind in the user's home.

Replication is synchronous: pg_auto_failover lists the standby in synchronous_standby_names while
it is healthy, so a commit is acknowledged only once the standby has flushed it. With one standby
and number_sync_standbys 0 (the default), the primary stops waiting for a standby that failed
(state wait_primary) instead of refusing writes: one failure at a time loses nothing.

The monitor's timings and the data nodes' settings can be given (PROFILES below; "fast" is the
tests' own): they decide how soon a dead primary is noticed and its standby promoted.

Where each server runs is the `network`'s choice: by default (Loopback) every node on 127.0.0.1 in
the caller's network namespace; netns_pg.Network puts each data node in a namespace of its own so a
test can cut it off while it runs.

    with PgHaCluster() as ha:
        url = ha.url()                # postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/hcprp?...
        old = ha.wait_primary()       # the node name of the primary
        ha.kill_node(old)             # kill -9 of its pg_autoctl and postgres: a dead machine
        new = ha.wait_primary(other_than=old)
        ha.start_node(old)            # rejoins as a standby (pg_rewind)
        ha.switchover()               # planned: pg_autoctl perform switchover

Needs pg_autoctl (Debian: postgresql-15-auto-failover) and the server binaries; available() says
whether they are there.
"""

import datetime
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_pg"))

import pg  # noqa: E402

# Failover timings, the one place they are set (docs/postgresql.md, "High availability", explains
# them to operators). A kill -9 of the primary goes through these steps (FAILOVER_STEPS below names
# them as the monitor's events show them):
#
# 1. Detection. The monitor's health check connects to every node each health_check_period; a
#    refused or timed-out connection (health_check_timeout) is retried health_check_max_retries times,
#    health_check_retry_delay apart, then the node is marked unhealthy. The primary is failed over
#    once that has happened and its keeper (which reports every second) has also been silent for
#    node_considered_unhealthy_timeout; the decision is taken when the standby's keeper next reports
#    (at once: the health change wakes it). Both conditions are needed, so a short timeout fails
#    over a keeper that is merely slow only if its postgres also refuses connections twice.
# 2. Promotion, all done by the standby's keeper (pg_autoctl 2.0; nothing in it is a setting): report
#    prepare_promotion, then at stop_replication set default_transaction_read_only, pg_ctl promote,
#    wait 1 s, CHECKPOINT (which waits for the end-of-recovery checkpoint), clean up, report. Every
#    step starts processes or sessions: CPU taken by clients' session attempts slows it down.
# 3. Writes. The monitor assigns wait_primary once the standby reported stop_replication and
#    primary_demote_timeout has passed since it asked the old primary to demote itself; the keeper
#    then turns default_transaction_read_only off and libpq (target_session_attrs=read-write) finds
#    the new primary at hcprp's next call. The demote timeout protects an asynchronous pair; under
#    synchronous replication an old primary cut off from its standby cannot acknowledge a commit, so
#    1 s (less than step 2 takes) adds nothing.
#
# pg_auto_failover's defaults (5 s checks retried twice 2 s apart, a 20 s unhealthy timeout, a 30 s
# demote timeout) give a failover of 30-50 s. FAST_* are the tests' and the benchmark's; PREVIOUS_*
# and OLDER_* the tuned timings they replaced, kept so that bench/pg_ha/run.py compares them in one run.
DEFAULT_MONITOR_SETTINGS = {}
FAST_MONITOR_SETTINGS = {
    # A dead primary refuses at once on its own machine; a silent one (cut off) costs the timeout.
    "pgautofailover.health_check_period": "500",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "250",
    # One keeper round (1 s): a primary is failed over only once it missed a report and failed two
    # health checks in a row.
    "pgautofailover.node_considered_unhealthy_timeout": "1000",
    "pgautofailover.primary_demote_timeout": "1000",
}
# Data nodes (postgresql.auto.conf of each). A standby writes the pages it replayed only at its
# restartpoints, which follow the primary's checkpoints; the promotion's CHECKPOINT writes whatever
# is dirty since the last one. Checkpoints every 30 s instead of 5 min keep that short, at the cost
# of more full-page writes on the primary.
FAST_NODE_SETTINGS = {
    "checkpoint_timeout": "30s",
}
PREVIOUS_MONITOR_SETTINGS = dict(FAST_MONITOR_SETTINGS, **{
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
})
OLDER_MONITOR_SETTINGS = dict(PREVIOUS_MONITOR_SETTINGS, **{
    "pgautofailover.node_considered_unhealthy_timeout": "3000",
    "pgautofailover.primary_demote_timeout": "5000",
})
# Named profiles (HCPRP_HA_MONITOR, bench/pg_ha/run.py --monitor): (monitor settings, data node settings).
PROFILES = {"fast": (FAST_MONITOR_SETTINGS, FAST_NODE_SETTINGS), "previous": (PREVIOUS_MONITOR_SETTINGS, {}),
            "older": (OLDER_MONITOR_SETTINGS, {}), "default": (DEFAULT_MONITOR_SETTINGS, {})}


# The steps of a failover as the monitor's events show them, in order: (name, the node it concerns
# ("old" primary or "new" one), a test on an event (reported state, goal state, description)).
FAILOVER_STEPS = [
    ("health check failed", "old", lambda r, g, d: "marked as unhealthy" in d),
    ("failover decided", "new", lambda r, g, d: g == "prepare_promotion"),
    ("prepare_promotion reached", "new", lambda r, g, d: r == "prepare_promotion"),
    ("promoted read-only", "new", lambda r, g, d: r == "stop_replication"),
    ("wait_primary assigned", "new", lambda r, g, d: g == "wait_primary"),
    ("wait_primary reached", "new", lambda r, g, d: r == "wait_primary"),
]


# The same steps as the new primary's postgres logs them (its log/ directory, one line each, with
# milliseconds): promoted, and writable once default_transaction_read_only is off again.
SERVER_STEPS = [
    ("postgres promoted", "database system is ready to accept connections"),
    ("read-write", 'parameter "default_transaction_read_only" changed to "off"'),
]


def server_steps(pgdata, wall_time):
    """{step name: seconds after wall_time} for SERVER_STEPS, from the server logs in `pgdata`."""
    lines = []
    log_dir = os.path.join(pgdata, "log")
    for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
        with open(os.path.join(log_dir, name), "rb") as f:
            lines += f.read().decode("utf-8", "replace").splitlines()
    steps = {}
    for line in lines:
        try:  # "2026-11-28 05:16:04.042 UTC [16778] LOG:  ..."
            at = datetime.datetime.strptime(" ".join(line.split(" ", 3)[:3]), "%Y-%m-%d %H:%M:%S.%f %Z")
        except ValueError:
            continue
        t = at.replace(tzinfo=datetime.timezone.utc).timestamp() - wall_time
        for name, text in SERVER_STEPS:
            if t >= 0 and name not in steps and text in line:
                steps[name] = t
    return steps


def failover_steps(events, old, new):
    """{step name: seconds after the fault} for FAILOVER_STEPS, from events_since(fault time); a step
    without an event is left out."""
    steps = {}
    for name, which, matches in FAILOVER_STEPS:
        node = old if which == "old" else new
        for t, n, r, g, d in events:
            if n == node and matches(r, g, d or ""):
                steps[name] = t
                break
    return steps


def find_pg_autoctl():
    return shutil.which("pg_autoctl")


def available():
    return pg.find_binaries() is not None and find_pg_autoctl() is not None


def skip_unless_available():
    if not available():
        print("skipped: pg_autoctl or the PostgreSQL server binaries not found "
              "(Debian: apt-get install postgresql postgresql-15-auto-failover)", flush=True)
        raise SystemExit(pg.SKIP_CODE)


class HaError(RuntimeError):
    pass


class Loopback:
    """Every server on 127.0.0.1 in the caller's network namespace."""

    subnet = None  # clients connect from 127.0.0.1, which initdb's pg_hba.conf already trusts

    def host(self, name):
        return "127.0.0.1"

    def wrap(self, name, argv):
        return argv


class Node:
    def __init__(self, name, pgdata, port, log_path):
        self.name = name
        self.pgdata = pgdata
        self.port = port
        self.log_path = log_path
        self.proc = None  # the `pg_autoctl run` process (a process group of its own)


class PgHaCluster:
    """A monitor and `standbys + 1` data nodes. Not thread-safe: one test drives it."""

    def __init__(self, database="hcprp", standbys=1, monitor_settings=None, max_connections=400,
                 network=None, node_settings=None):
        self.bin = pg.find_binaries()
        self.autoctl = find_pg_autoctl()
        if self.bin is None or self.autoctl is None:
            raise HaError("pg_autoctl or the PostgreSQL server binaries not found")
        self.database = database
        self.net = network or Loopback()
        self.max_connections = max_connections
        self.node_settings = node_settings or {}
        self.as_root = os.geteuid() == 0
        self.dir = tempfile.mkdtemp(prefix="hcprp-pg-ha-")
        if self.as_root:
            pw = pwd.getpwnam(pg.SERVER_USER)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o755)
        self.monitor = None
        self.nodes = {}
        try:
            self._start_monitor(DEFAULT_MONITOR_SETTINGS if monitor_settings is None else monitor_settings)
            for i in range(standbys + 1):
                self._create_node(f"node{i + 1}")
                # The first node becomes the primary; the next ones join as standbys one at a time.
                self.wait_states({f"node{j + 1}": None for j in range(i + 1)}, timeout=120)
        except BaseException:
            self.close()
            raise

    # -- set-up -----------------------------------------------------------------------------------

    def _env(self):
        env = dict(os.environ)
        env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "config")
        env["XDG_DATA_HOME"] = os.path.join(self.dir, "share")
        env["PG_CONFIG"] = os.path.join(self.bin, "pg_config")
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env["PGCONNECT_TIMEOUT"] = "5"
        return env

    def _argv(self, *args, where="monitor"):
        """The command line of a pg_autoctl command run where node `where` runs."""
        argv = [self.autoctl, *args]
        if self.as_root:
            argv = ["runuser", "-u", pg.SERVER_USER, "--", "env", *[f"{k}={v}" for k, v in self._env().items()
                                                                   if k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME",
                                                                            "PG_CONFIG", "PATH",
                                                                            "PGCONNECT_TIMEOUT")], *argv]
        return self.net.wrap(where, argv)

    def autoctl_cmd(self, *args, timeout=120, where="monitor"):
        """Runs a pg_autoctl command to completion (where node `where` runs); returns its stdout."""
        try:
            r = subprocess.run(self._argv(*args, where=where), capture_output=True, stdin=subprocess.DEVNULL,
                               timeout=timeout, cwd=self.dir, env=self._env())
        except subprocess.TimeoutExpired as e:
            raise HaError(f"pg_autoctl {' '.join(args)} did not finish within {timeout}s") from e
        if r.returncode != 0:
            raise HaError(f"pg_autoctl {' '.join(args)} exited {r.returncode}: "
                          f"{r.stderr.decode('utf-8', 'replace')[-3000:]}")
        return r.stdout.decode("utf-8", "replace")

    def _spawn_run(self, node):
        log = open(node.log_path, "ab")
        node.proc = subprocess.Popen(self._argv("run", "--pgdata", node.pgdata, where=node.name), stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL, cwd=self.dir, env=self._env(),
                                     start_new_session=True)
        log.close()

    def _start_monitor(self, settings):
        port = pg.free_port()
        node = Node("monitor", os.path.join(self.dir, "monitor"), port, os.path.join(self.dir, "monitor.log"))
        self.autoctl_cmd("create", "monitor", "--pgdata", node.pgdata, "--pgport", str(port),
                         "--pgctl", os.path.join(self.bin, "pg_ctl"), "--hostname", self.net.host("monitor"),
                         "--auth", "trust", "--no-ssl", timeout=180)
        if settings:
            with open(os.path.join(node.pgdata, "postgresql.auto.conf"), "a") as f:
                for k, v in settings.items():
                    f.write(f"{k} = '{v}'\n")
        self._trust_subnet(node)
        self.monitor = node
        self._spawn_run(node)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self.monitor_sql("SELECT 1")
                return
            except HaError:
                time.sleep(0.2)
        raise HaError(f"the monitor did not start: {self.log('monitor')[-3000:]}")

    def monitor_uri(self):
        return (f"postgres://autoctl_node@{self.net.host('monitor')}:{self.monitor.port}/pg_auto_failover"
                "?sslmode=disable")

    def _create_node(self, name):
        port = pg.free_port()
        node = Node(name, os.path.join(self.dir, name), port, os.path.join(self.dir, f"{name}.log"))
        self.autoctl_cmd("create", "postgres", "--pgdata", node.pgdata, "--pgport", str(port),
                         "--pgctl", os.path.join(self.bin, "pg_ctl"), "--hostname", self.net.host(name),
                         "--name", name, "--dbname", self.database, "--monitor", self.monitor_uri(),
                         "--auth", "trust", "--no-ssl", timeout=300, where=name)
        with open(os.path.join(node.pgdata, "postgresql.auto.conf"), "a") as f:
            f.write(f"max_connections = {self.max_connections}\n")
            f.write("log_timezone = 'UTC'\n")  # server_steps() reads its timestamps as UTC
            for k, v in self.node_settings.items():
                f.write(f"{k} = '{v}'\n")
        self._trust_subnet(node)
        self.nodes[name] = node
        self._spawn_run(node)

    def _trust_subnet(self, node):
        """Lets every server of the network (clients, monitor, the other nodes) in without a password,
        as --auth trust does for loopback."""
        if self.net.subnet:
            with open(os.path.join(node.pgdata, "pg_hba.conf"), "a") as f:
                f.write(f"host all all {self.net.subnet} trust\nhost replication all {self.net.subnet} trust\n")

    # -- state ------------------------------------------------------------------------------------

    def monitor_sql(self, sql):
        argv = [os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                "-h", self.net.host("monitor"), "-p", str(self.monitor.port), "-U", "autoctl_node", "-d", "pg_auto_failover",
                "-c", sql]
        r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=30, env=self._env())
        if r.returncode != 0:
            raise HaError(f"monitor query failed: {r.stderr.decode('utf-8', 'replace')[-1000:]}")
        return r.stdout.decode("utf-8", "replace").strip()

    def states(self):
        """{node name: (reported state, goal state)} as the monitor sees them."""
        out = self.monitor_sql("SELECT json_agg(json_build_array(nodename, reportedstate, goalstate)) "
                               "FROM pgautofailover.node")
        return {n: (r, g) for n, r, g in (json.loads(out) if out else [])}

    def primary(self):
        """The node that the monitor has settled as the writable one (state primary, or wait_primary
        while it has no standby in sync), or None."""
        for name, (reported, goal) in self.states().items():
            if reported == goal and reported in ("primary", "wait_primary", "single"):
                return name
        return None

    def events_since(self, wall_time):
        """The monitor's events (pgautofailover.event) from `wall_time` (time.time()) on, oldest first:
        [(seconds after wall_time, node name, reported state, goal state, description)]."""
        out = self.monitor_sql(
            "SELECT json_agg(json_build_array(extract(epoch FROM eventtime), nodename, reportedstate, goalstate, "
            f"description) ORDER BY eventid) FROM pgautofailover.event WHERE eventtime >= to_timestamp({wall_time})")
        return [(float(t) - wall_time, n, r, g, d) for t, n, r, g, d in (json.loads(out) if out else [])]

    def wait_states(self, expected, timeout=60):
        """Waits until the group is stable: a primary and every other node a secondary (`expected` only
        names the nodes that must be there)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.states()
            except HaError:
                last = None
            if last and set(expected) <= set(last):
                settled = all(r == g for r, g in last.values())
                roles = sorted(r for r, _ in last.values())
                if settled and roles.count("primary") == 1 and (
                        roles.count("secondary") == len(roles) - 1) and (len(roles) > 1 or roles == ["single"]):
                    return last
                if settled and roles == ["single"]:
                    return last
            time.sleep(0.2)
        raise HaError(f"the group did not settle within {timeout}s (last states {last}); "
                      f"logs: {self.tail_logs()}")

    def wait_primary(self, other_than=None, timeout=120):
        """Waits for a settled primary (`other_than`: not that node); returns its name."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                p = self.primary()
            except HaError:
                p = None
            if p and p != other_than:
                return p
            time.sleep(0.1)
        raise HaError(f"no primary other than {other_than} within {timeout}s: {self.states()}; "
                      f"logs: {self.tail_logs()}")

    def writable_node(self):
        """The data node that accepts writes now (asks each server), or None."""
        for name, node in self.nodes.items():
            try:
                out = self.node_sql(name, "SELECT pg_is_in_recovery()")
            except HaError:
                continue
            if out == "f":
                return name
        return None

    def node_psql(self, name, sql, database=None):
        """The command line of psql running `sql` on node `name`, from where that node runs (so it
        reaches a node that is cut off from the others)."""
        node = self.nodes[name]
        return self.net.wrap(name, [os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                    "-h", self.net.host(name), "-p", str(node.port), "-U", "postgres",
                                    "-d", database or self.database, "-c", sql])

    def node_sql(self, name, sql, database=None):
        argv = self.node_psql(name, sql, database)
        r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=30, env=self._env())
        if r.returncode != 0:
            raise HaError(f"query on {name} failed: {r.stderr.decode('utf-8', 'replace')[-1000:]}")
        return r.stdout.decode("utf-8", "replace").strip()

    # -- faults -----------------------------------------------------------------------------------

    def node_pids(self, name):
        """PIDs of a node's (or the monitor's) pg_autoctl processes and of its postgres (postmaster
        and children)."""
        node = self.monitor if name == "monitor" else self.nodes[name]
        pids = set()
        if node.proc:
            # `pg_autoctl run` started a session of its own, so its group is its PID; the group's
            # members stay in it after the leader died.
            pgid = node.proc.pid
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    with open(f"/proc/{d}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[2]) == pgid and fields[0] != "Z":  # a zombie is dead already
                        pids.add(int(d))
                except (OSError, IndexError, ValueError):
                    continue
        try:
            with open(os.path.join(node.pgdata, "postmaster.pid")) as f:
                postmaster = int(f.readline())
            with open(f"/proc/{postmaster}/cmdline", "rb") as f:  # not a reused PID
                if node.pgdata.encode() not in f.read():
                    return pids
            pids.add(postmaster)
            for d in os.listdir("/proc"):
                if d.isdigit():
                    try:
                        with open(f"/proc/{d}/stat") as f:
                            if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                                pids.add(int(d))
                    except (OSError, IndexError, ValueError):
                        continue
        except (OSError, ValueError):
            pass
        return pids

    def kill_node(self, name):
        """kill -9 of the node's postgres and its pg_autoctl (nothing restarts it): the machine died."""
        node = self.monitor if name == "monitor" else self.nodes[name]
        # The supervisor may fork (a service it restarts) between a scan and the kills: scan again
        # until nothing is left.
        deadline = time.monotonic() + 10
        while pids := self.node_pids(name):
            if time.monotonic() > deadline:
                raise HaError(f"processes of {name} still alive after kill -9: {sorted(pids)}")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        if node.proc:
            node.proc.wait(timeout=10)
            node.proc = None

    def start_node(self, name):
        """Starts a killed node again: pg_autoctl rejoins it as a standby (rewinding it if needed)."""
        node = self.nodes[name]
        if node.proc is None:
            pidfile = os.path.join(node.pgdata, "postmaster.pid")
            if os.path.exists(pidfile):
                os.remove(pidfile)  # its postmaster was killed: nothing runs on this directory
            self._spawn_run(node)

    def switchover(self, timeout=120):
        """A planned switchover (pg_autoctl perform switchover); returns once it is done."""
        self.autoctl_cmd("perform", "switchover", "--pgdata", self.monitor.pgdata, "--wait", str(timeout),
                         timeout=timeout + 30)

    # -- access -----------------------------------------------------------------------------------

    def url(self, schema=None, extra=""):
        """The store URL hcprp takes with --store: every data node, read-write sessions only."""
        hosts = ",".join(f"{self.net.host(n.name)}:{n.port}" for n in self.nodes.values())
        u = f"postgresql://postgres@{hosts}/{self.database}?target_session_attrs=read-write"
        if schema:
            u += f"&schema={schema}"
        return u + extra

    def log(self, name):
        node = self.monitor if name == "monitor" else self.nodes[name]
        try:
            with open(node.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def tail_logs(self, chars=1500):
        names = ["monitor", *self.nodes]
        return "\n".join(f"--- {n}:\n{self.log(n)[-chars:]}" for n in names)

    # -- teardown ---------------------------------------------------------------------------------

    def close(self):
        """Kills every process of the group and removes its directory. Safe to call twice."""
        for name in list(self.nodes):
            try:
                self.kill_node(name)
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        if self.monitor:
            try:
                self.kill_node("monitor")
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        if self.dir:
            keep = os.environ.get("HCPRP_KEEP_HA_DIR")
            if not keep:
                shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
