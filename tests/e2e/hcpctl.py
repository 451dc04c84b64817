#!/usr/bin/env python3
"""hcpctl as a user runs it against `hcprp serve`: exit codes, the states it prints, ARM errors."""

import json
import socket
import re
import subprocess

from e2e import Arm, expect, expect_eq, run_tests
import e2e


def hcpctl(endpoint, *args, subscription="00000000-0000-4000-8000-0000000000e2", timeout=120):
    argv = [e2e.ARGS.hcpctl, "--endpoint", endpoint, "-s", subscription, "-g", "cli-rg",
            "--max-poll-interval", "0.2", *args]
    r = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def test_cluster_nodepool_delete(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="0.3")
    rc, out, err = hcpctl(endpoint, "subscription", "register")
    expect_eq(rc, 0, f"subscription register (stderr {err})")
    expect("Registered" in out, f"subscription register output: {out!r}")

    rc, out, err = hcpctl(endpoint, "cluster", "create", "demo")
    expect_eq(rc, 0, f"cluster create exit code (stdout {out!r}, stderr {err!r})")
    # Without a terminal, each new status is printed on its own line on stderr.
    for state in ("Accepted", "Provisioning", "Succeeded"):
        expect(state in err, f"cluster create did not print {state}: {err!r}")
    expect("demo" in out and "Succeeded" in out, f"cluster create read-back: {out!r}")

    rc, out, err = hcpctl(endpoint, "nodepool", "create", "np1", "--cluster", "demo", "--replicas", "3")
    expect_eq(rc, 0, f"nodepool create exit code (stdout {out!r}, stderr {err!r})")
    expect("Succeeded" in err, f"nodepool create progress: {err!r}")
    expect("np1" in out and "Succeeded" in out, f"nodepool create read-back: {out!r}")

    rc, out, err = hcpctl(endpoint, "-o", "json", "nodepool", "show", "np1", "--cluster", "demo")
    expect_eq(rc, 0, f"nodepool show (stderr {err!r})")
    body = json.loads(out)
    expect_eq(body["properties"]["replicas"], 3, "node pool replicas")

    rc, out, err = hcpctl(endpoint, "cluster", "delete", "demo")
    expect_eq(rc, 0, f"cluster delete exit code (stdout {out!r}, stderr {err!r})")
    expect("Deleting" in err and "Succeeded" in err, f"cluster delete progress: {err!r}")
    expect("Succeeded" in out, f"cluster delete output: {out!r}")

    rc, out, err = hcpctl(endpoint, "cluster", "show", "demo")
    expect_eq(rc, 1, f"show of a deleted cluster (stdout {out!r}, stderr {err!r})")
    expect("404" in err and "NotFound" in err, f"show of a deleted cluster: {err!r}")
    rc, out, err = hcpctl(endpoint, "cluster", "delete", "demo")
    expect_eq(rc, 0, f"delete of an absent cluster (stderr {err!r})")
    ctx.check()


def test_invalid_body(ctx):
    endpoint, _, _ = ctx.serve(profile="instant")
    sub = "00000000-0000-4000-8000-0000000000e3"
    rc, _, err = hcpctl(endpoint, "subscription", "register", subscription=sub)
    expect_eq(rc, 0, f"subscription register ({err})")
    arm = Arm(endpoint, subscription=sub, resource_group="cli-rg")
    body = arm.cluster_body("bad", pod_cidr="10.128.0.0/99")
    path = ctx.path("bad-cluster.json")
    with open(path, "w") as f:
        json.dump(body, f)
    rc, out, err = hcpctl(endpoint, "cluster", "create", "bad", "--file", path, subscription=sub)
    expect_eq(rc, 1, f"create with a bad CIDR (stdout {out!r}, stderr {err!r})")
    expect("HTTP 400" in err, f"ARM status in the error: {err!r}")
    expect("InvalidRequestContent" in err or "InvalidParameter" in err, f"ARM error code: {err!r}")
    expect("podCidr" in err, f"the error does not name the field: {err!r}")
    # Nothing was created.
    expect_eq(arm.call("GET", arm.cluster_path("bad")).status, 404, "GET after the rejected create")
    ctx.check()


def test_unreachable_endpoint(ctx):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    rc, out, err = hcpctl(f"http://127.0.0.1:{port}", "cluster", "create", "demo", timeout=120)
    expect_eq(rc, 3, f"exit code against an unreachable endpoint (stdout {out!r}, stderr {err!r})")
    expect(err.strip(), "no error message for an unreachable endpoint")
    rc, out, err = hcpctl(f"http://127.0.0.1:{port}", "cluster", "list", timeout=120)
    expect_eq(rc, 3, f"list against an unreachable endpoint (stderr {err!r})")


def test_no_wait_names_the_operation_to_follow(ctx):
    endpoint, _, _ = ctx.serve(profile="demo", time_scale="0.3")
    rc, out, err = hcpctl(endpoint, "subscription", "register")
    expect_eq(rc, 0, f"register ({err})")
    rc, out, err = hcpctl(endpoint, "cluster", "create", "nw", "--no-wait")
    expect_eq(rc, 0, f"create --no-wait ({out} {err})")
    words = out.split("hcpctl operation show ")
    expect(len(words) == 2, f"--no-wait output without the command to follow it: {out!r}")
    op_id = words[1].split()[0]
    expect(re.fullmatch(r"[0-9a-f-]{36}", op_id), f"--no-wait names {op_id!r}, not an operation ID")
    rc, out, err = hcpctl(endpoint, "operation", "show", op_id)
    expect_eq(rc, 0, f"operation show {op_id} ({out} {err})")
    expect(op_id in out, f"operation show output does not name {op_id}: {out!r}")


if __name__ == "__main__":
    run_tests([test_cluster_nodepool_delete, test_invalid_body, test_unreachable_endpoint,
               test_no_wait_names_the_operation_to_follow])
