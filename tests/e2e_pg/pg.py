"""A throwaway PostgreSQL server for the end-to-end tests on PostgreSQL.

PgServer runs initdb in a temporary directory, starts the server on a free 127.0.0.1 port (its unix
socket in that directory, fsync on) and creates a database. stop(), start() and restart() take the
same server down and up again on the same data and port, so tests can simulate an outage; close()
stops it and removes the directory. PostgreSQL refuses to run as root: when the tests run as root,
every server tool runs as the "postgres" user through runuser, on a directory owned by that user.

The binaries are taken from $HCPRP_PG_BIN, else the newest /usr/lib/postgresql/<version>/bin, else
PATH (the same search as src/store/postgres/pg_test_server.cpp). find_binaries() returns None when
they are absent; test files then exit with SKIP_CODE, which their CMakeLists.txt declares as
"skipped".

    with PgServer() as pg:
        url = pg.url()            # postgresql://postgres@127.0.0.1:PORT/hcprp
        pg.stop(mode="fast")      # or "immediate": no shutdown checkpoint, like a crash
        pg.start()
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile

SERVER_USER = "postgres"
SKIP_CODE = 77  # ctest SKIP_RETURN_CODE of the tests in this folder


def find_binaries():
    """The directory holding initdb and pg_ctl, or None."""
    def has_tools(d):
        return os.path.isfile(os.path.join(d, "initdb")) and os.path.isfile(os.path.join(d, "pg_ctl"))

    env = os.environ.get("HCPRP_PG_BIN")
    if env:
        return env if has_tools(env) else None
    versions = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        try:
            versions.append((int(d.split("/")[-2]), d))
        except ValueError:
            continue
    for _, d in sorted(versions, reverse=True):
        if has_tools(d):
            return d
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d and has_tools(d):
            return d
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip_unless_available():
    """Exits with SKIP_CODE (the test is reported skipped) when the server binaries are absent."""
    if find_binaries() is None:
        print("skipped: PostgreSQL server binaries (initdb, pg_ctl) not found "
              "(Debian: apt-get install postgresql, or set HCPRP_PG_BIN)", flush=True)
        raise SystemExit(SKIP_CODE)


class PgError(RuntimeError):
    pass


class PgServer:
    """One private PostgreSQL server. Not thread-safe: one test drives it."""

    def __init__(self, database="hcprp", bin_dir=None, max_connections=400):
        self.bin = bin_dir or find_binaries()
        if self.bin is None:
            raise PgError("PostgreSQL server binaries (initdb, pg_ctl) not found; "
                          "install them (Debian: apt-get install postgresql) or set HCPRP_PG_BIN")
        self.database = database
        self.max_connections = max_connections
        self.as_root = os.geteuid() == 0
        self.dir = tempfile.mkdtemp(prefix="hcprp-pg-e2e-")
        self.data = os.path.join(self.dir, "data")
        self.log_path = os.path.join(self.dir, "server.log")
        self.port = None
        self.running = False
        self._started_once = False
        if self.as_root:
            pw = pwd.getpwnam(SERVER_USER)  # KeyError: no such user, a broken installation
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o700)
        try:
            self._tool("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                       "--locale=C", "--no-sync", timeout=180)
            self.port = free_port()
            self.start()
            self._tool("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", self.database)
        except BaseException:
            self.close()
            raise

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, timeout=60):
        """Starts the server on its data directory and port (no-op when running)."""
        if self.running:
            return
        for _ in range(3):
            try:
                self._tool("pg_ctl", "start", "-w", "-t", str(timeout), "-D", self.data, "-l", self.log_path,
                           "-o", self._server_options(), timeout=timeout + 30)
                self.running = True
                self._started_once = True
                return
            except PgError:
                # Only the very first start may move to another port (someone took the free one
                # meanwhile); later, clients hold URLs with this port.
                if self._started_once or "could not bind" not in self.log():
                    raise
                self.port = free_port()
        raise PgError(f"could not start PostgreSQL: {self.log()[-2000:]}")

    def _server_options(self):
        return (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.dir} "
                f"-c fsync=on -c max_connections={self.max_connections}")

    def processes(self):
        """PIDs of the server: the postmaster and every process it started."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        pids = [postmaster]
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                            pids.append(int(d))
                except (OSError, IndexError, ValueError):
                    continue
        return pids

    def freeze(self):
        """SIGSTOPs every server process: connections stay open, nothing answers (a stuck server)."""
        for pid in self.processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self):
        for pid in self.processes():
            os.kill(pid, signal.SIGCONT)

    def stop(self, mode="fast", timeout=60):
        """Stops the server: "fast" terminates sessions and checkpoints, "immediate" aborts like a crash
        (recovery runs at the next start), "smart" waits for sessions to end. The data stays."""
        if not self.running:
            return
        self._tool("pg_ctl", "stop", "-w", "-t", str(timeout), "-m", mode, "-D", self.data,
                   timeout=timeout + 30)
        self.running = False

    def restart(self, mode="fast"):
        self.stop(mode)
        self.start()

    def close(self):
        """Stops the server (immediately) and removes its directory. Safe to call twice."""
        if self.running:
            try:
                self.stop(mode="immediate")
            except PgError:
                pass
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- access -----------------------------------------------------------------------------------

    def url(self, database=None, schema=None):
        """The store URL hcprp takes with --store."""
        u = f"postgresql://postgres@127.0.0.1:{self.port}/{database or self.database}"
        return u + (f"?schema={schema}" if schema else "")

    def psql(self, sql, database=None):
        """Runs SQL as the superuser; returns its unaligned, tuples-only output."""
        return self._tool("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                          "-p", str(self.port), "-U", "postgres", "-d", database or self.database,
                          "-c", sql, timeout=60)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _tool(self, tool, *args, timeout=60):
        argv = [os.path.join(self.bin, tool), *args]
        if self.as_root:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        try:
            r = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout,
                               cwd=self.dir if self.dir else "/")
        except subprocess.TimeoutExpired as e:
            raise PgError(f"{tool} did not finish within {timeout}s") from e
        out = r.stdout.decode("utf-8", "replace")
        if r.returncode != 0:
            raise PgError(f"{tool} {' '.join(args)} exited {r.returncode}: "
                          f"{out[-1000:]} {r.stderr.decode('utf-8', 'replace')[-2000:]}")
        return out
