#!/usr/bin/env python3
"""Backup and restore of a PostgreSQL store (docs/backup.md): WAL archiving on, a base backup taken
with pg_basebackup while hcprp runs, a named restore point just after it; hcprp works on and stops;
the server is then recovered from the base backup and the archived WAL to that restore point
(point-in-time recovery), and hcprp starts on it. The Cluster Service simulator runs throughout as
its own process (the "real world", never restored). What must follow is in
../e2e/restore_scenario.py.

Exits 77 (skipped) only when the PostgreSQL server binaries are absent."""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import pg  # noqa: E402
import restore_scenario  # noqa: E402
from e2e import expect, run_tests, wait_until  # noqa: E402

PROFILE = ("demo", "0.5")
RESTORE_POINT = "hcprp-backup"


def chown_tree(path, uid, gid):
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.chown(os.path.join(root, n), uid, gid, follow_symlinks=False)


class PgDeployment(restore_scenario.Deployment):
    def __init__(self, ctx, server):
        self.ctx = ctx
        self.server = server
        self.store = server.url()
        self.cs_url = None
        self.proc = None
        st = os.stat(server.dir)
        self.owner = (st.st_uid, st.st_gid)
        self.archive = os.path.join(server.dir, "archive")
        self.base = os.path.join(server.dir, "base")
        os.makedirs(self.archive)
        os.chown(self.archive, *self.owner)
        server.psql("ALTER SYSTEM SET archive_mode = 'on'")
        server.psql(f"ALTER SYSTEM SET archive_command = 'cp %p {self.archive}/%f'")
        server.restart()

    def start(self):
        if self.cs_url is None:
            self.cs_url, _ = self.ctx.clusters_service(profile=PROFILE[0], time_scale=PROFILE[1])
        endpoint, _, self.proc = self.ctx.serve(
            profile=PROFILE[0], time_scale=PROFILE[1], extra=["--store", self.store, "--clusters-service", self.cs_url])
        return endpoint, self.cs_url

    def stop(self):
        rc = self.proc.stop()
        expect(rc == 0, f"hcprp serve exit {rc}")

    def backup(self):
        s = self.server
        s._tool("pg_basebackup", "-h", "127.0.0.1", "-p", str(s.port), "-U", "postgres", "-D", self.base,
                "-X", "stream", "-c", "fast", timeout=120)
        s.psql(f"SELECT pg_create_restore_point('{RESTORE_POINT}')")
        s.psql("SELECT pg_switch_wal()")  # the restore point's segment reaches the archive

    def restore(self):
        s = self.server
        s.psql("SELECT pg_switch_wal()")
        s.stop()
        shutil.rmtree(s.data)  # the lost database
        shutil.copytree(self.base, s.data, symlinks=True)
        with open(os.path.join(s.data, "postgresql.auto.conf"), "a") as f:
            f.write(f"restore_command = 'cp {self.archive}/%f %p'\n"
                    f"recovery_target_name = '{RESTORE_POINT}'\n"
                    "recovery_target_action = 'promote'\n")
        open(os.path.join(s.data, "recovery.signal"), "w").close()
        chown_tree(s.data, *self.owner)
        os.chmod(s.data, 0o700)
        s.start()
        # Accepting connections while it replays the archive (read-only); writable once promoted.
        wait_until(lambda: s.psql("SELECT pg_is_in_recovery()").strip() == "f", timeout=60,
                   what="PostgreSQL to reach the restore point and be promoted")


def test_restore_postgres(ctx):
    pg.skip_unless_available()
    server = pg.PgServer()
    ctx.closers.append(server.close)
    restore_scenario.run(ctx, PgDeployment(ctx, server))


if __name__ == "__main__":
    pg.skip_unless_available()
    run_tests([test_restore_postgres])
