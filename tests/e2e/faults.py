#!/usr/bin/env python3
"""Storage faults answered honestly: a full disk and a read-only file make writes 503 ServiceUnavailable with
Retry-After and /readyz 503 until a write succeeds again, and store nothing; a store that cannot be opened for
writing at start-up is an error naming the file. The store lives on a small tmpfs the test mounts (as root);
where mounting is not allowed, the tests say so and pass without running."""

import os
import subprocess

from e2e import Arm, expect, expect_eq, http_request, run_tests, wait_until


def mount_tmpfs(ctx, size):
    """Mounts a tmpfs of `size` under the test directory; returns its path, or None where not allowed."""
    where = ctx.path("tmpfs")
    os.makedirs(where)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", where], capture_output=True)
    if r.returncode != 0:
        print(f"skipped: cannot mount a tmpfs here ({r.stderr.decode().strip()})", flush=True)
        return None
    ctx.closers.append(lambda: subprocess.run(["umount", "-l", where], capture_output=True))
    return where


def remount(where, mode):
    r = subprocess.run(["mount", "-o", f"remount,{mode}", where], capture_output=True)
    expect_eq(r.returncode, 0, f"remount {mode}: {r.stderr.decode()}")


def start(ctx, store_dir):
    """hcprp serve (simulator in process, its data elsewhere) with the store in `store_dir`."""
    store = "sqlite://" + os.path.join(store_dir, "hcprp.db")
    endpoint, _, proc = ctx.serve(extra=("--store", store))
    arm = Arm(endpoint)
    arm.register()
    return arm, endpoint, proc


def create(arm, name):
    r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name))
    expect_eq(r.status, 201, f"create {name}: {r!r}")
    _, last = arm.poll_operation(r.header("Azure-AsyncOperation"))
    expect_eq(last.get("status"), "Succeeded", f"create {name}")


def expect_unavailable(r, what):
    expect_eq(r.status, 503, f"{what}: {r!r}")
    expect(r.header("Retry-After"), f"{what}: no Retry-After")
    expect_eq((r.body or {}).get("error", {}).get("code"), "ServiceUnavailable", f"{what}: error code")


def readyz(endpoint):
    return http_request("GET", endpoint + "/readyz").status


def test_full_disk(ctx):
    where = mount_tmpfs(ctx, "8m")
    if where is None:
        return
    arm, endpoint, _ = start(ctx, where)
    create(arm, "before")

    filler = os.path.join(where, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass  # ENOSPC: the file system is full
    finally:
        os.close(fd)
    expect_unavailable(arm.call("PUT", arm.cluster_path("during"), arm.cluster_body("during")), "create on a full disk")
    expect_unavailable(arm.call("PATCH", arm.cluster_path("before"), {"tags": {"a": "b"}}), "PATCH on a full disk")
    expect_eq(arm.call("GET", arm.cluster_path("before")).status, 200, "reads go on")
    expect_eq(readyz(endpoint), 503, "/readyz on a full disk")
    expect_eq(http_request("GET", endpoint + "/healthz").status, 200, "/healthz")

    os.remove(filler)
    wait_until(lambda: readyz(endpoint) == 200, 10, what="/readyz after space is freed")
    expect_eq(arm.call("GET", arm.cluster_path("during")).status, 404, "the refused create stored nothing")
    got = arm.call("GET", arm.cluster_path("before"))
    expect("tags" not in got.body or got.body["tags"] != {"a": "b"}, f"the refused PATCH stored nothing: {got!r}")
    create(arm, "during")


def test_read_only_store_at_start(ctx):
    """A store file that cannot be written (here: its file system mounted read-only, since root may write
    any file) is an error at start-up that names the file, not a frontend that answers every write 503."""
    where = mount_tmpfs(ctx, "16m")
    if where is None:
        return
    arm, _, proc = start(ctx, where)
    create(arm, "before")
    proc.stop()
    remount(where, "ro")
    db = os.path.join(where, "hcprp.db")
    r = subprocess.run([ctx_hcprp(), "frontend", "--store", "sqlite://" + db, "--clusters-service",
                        "http://127.0.0.1:9", "--listen", "127.0.0.1:0", "--tls-dir", ctx.tls.dir],
                       capture_output=True, timeout=60)
    err = r.stderr.decode("utf-8", "replace")
    expect(r.returncode != 0, f"frontend started on a read-only store: {err[-1000:]}")
    expect(db in err and "read-only" in err, f"the start-up error names the file: {err[-1000:]}")


def ctx_hcprp():
    import e2e
    return e2e.ARGS.hcprp


if __name__ == "__main__":
    run_tests([test_full_disk, test_read_only_store_at_start])
