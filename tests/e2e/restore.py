#!/usr/bin/env python3
"""Backup and restore of `hcprp serve` on SQLite (docs/backup.md): the store is copied with SQLite's
online backup (the sqlite3 command's `.backup`) while serve runs, hcprp works on, stops, and starts
again on the copy. The simulator's own database (simulator.db, the "real world") is not restored.
What must follow is in restore_scenario.py."""

import os
import shutil
import subprocess

import restore_scenario
from e2e import expect, run_tests

PROFILE = ("demo", "0.5")


class SqliteServe(restore_scenario.Deployment):
    def __init__(self, ctx):
        self.ctx = ctx
        self.proc = None
        self.copy = ctx.path("hcprp-backup.db")

    def start(self):
        endpoint, cs_url, self.proc = self.ctx.serve(profile=PROFILE[0], time_scale=PROFILE[1])
        self.store = "sqlite://" + self.ctx.db
        return endpoint, cs_url

    def stop(self):
        rc = self.proc.stop()
        expect(rc == 0, f"hcprp serve exit {rc}")

    def backup(self):
        sqlite3 = shutil.which("sqlite3")
        expect(sqlite3 is not None, "the sqlite3 command (Debian: sqlite3) is installed")
        r = subprocess.run([sqlite3, self.ctx.db, f".backup '{self.copy}'"], capture_output=True, timeout=60)
        expect(r.returncode == 0, f"sqlite3 .backup: {r.stderr.decode()[-1000:]}")

    def restore(self):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.ctx.db + suffix):
                os.remove(self.ctx.db + suffix)
        shutil.copyfile(self.copy, self.ctx.db)


def test_restore_sqlite(ctx):
    restore_scenario.run(ctx, SqliteServe(ctx))


if __name__ == "__main__":
    run_tests([test_restore_sqlite])
