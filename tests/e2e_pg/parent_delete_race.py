#!/usr/bin/env python3
"""A child created while its cluster is deleted, on both store engines.

For each of many ready clusters, a node pool (or external auth) PUT and the cluster's DELETE are sent
at the same instant from two threads, the PUT a few milliseconds before or after the DELETE. Whatever
the order the two requests reach the store in, the child must not end in an internal error:

- the PUT is refused with 409 (its cluster is being deleted), or 404 ParentResourceNotFound (the
  cluster's delete had already finished: the `instant` profile takes milliseconds), or
- the PUT is accepted and its create ends `Canceled` (the cluster's delete superseded it), or
  `Succeeded` when it finished before the delete began (its own delete then ends with the cluster).

Every cluster DELETE is accepted and ends `Succeeded`; afterwards nothing is left in the store or the
Cluster Service and `hcprp check` is clean. The outcomes are counted and printed.

The PostgreSQL half exits 77 (skipped) only when the PostgreSQL server binaries are absent.
"""

import argparse
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import pg  # noqa: E402
from e2e import Arm, expect, expect_eq, run_tests, wait_until  # noqa: E402

_extra = argparse.ArgumentParser(add_help=False)
_extra.add_argument("--rounds", type=int, default=int(os.environ.get("HCPRP_RACE_ROUNDS", "200")))
_extra.add_argument("--seed", type=int, default=1)
EXTRA, _rest = _extra.parse_known_args()
sys.argv = [sys.argv[0], *_rest]

BODIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "bodies.json")
WAVE = 20  # clusters raced at once


def external_auth_body(arm):
    with open(BODIES) as f:
        text = f.read().replace("{subscriptionId}", arm.subscription).replace("{resourceGroup}", arm.resource_group)
    return json.loads(text)["externalAuth"]


def race_one(arm, name, kind, offset, outcomes, problems):
    """Sends the child PUT and the cluster DELETE `offset` seconds apart (negative: the PUT first)."""
    child = arm.nodepool_path(name, "np1") if kind == "nodepool" else arm.cluster_path(name) + "/externalAuths/ea1"
    body = arm.nodepool_body(name) if kind == "nodepool" else external_auth_body(arm)
    answers = {}

    def put():
        if offset > 0:
            time.sleep(offset)
        answers["put"] = arm.call("PUT", child, body)

    def delete():
        if offset < 0:
            time.sleep(-offset)
        answers["delete"] = arm.call("DELETE", arm.cluster_path(name))

    threads = [threading.Thread(target=put), threading.Thread(target=delete)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    d = answers["delete"]
    if d.status != 202:
        problems.append(f"{name}: cluster DELETE answered {d.status}: {d.raw[:300]!r}")
        return
    p = answers["put"]
    if p.status == 409 or (p.status == 404 and (p.body or {}).get("error", {}).get("code") == "ParentResourceNotFound"):
        outcomes[str(p.status)] = outcomes.get(str(p.status), 0) + 1
    elif p.status in (200, 201):
        seen, final = arm.poll_operation(p.header("Azure-AsyncOperation"), timeout=120, interval=0.05)
        outcome = seen[-1]
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome not in ("Canceled", "Succeeded"):
            problems.append(f"{name}: {kind} create ended {outcome}: {final}")
    else:
        problems.append(f"{name}: {kind} PUT answered {p.status}: {p.raw[:300]!r}")
    seen, final = arm.poll_operation(d.header("Azure-AsyncOperation"), timeout=120, interval=0.05)
    if seen[-1] != "Succeeded":
        problems.append(f"{name}: cluster delete ended {seen[-1]}: {final}")


def create_ready(arm, names):
    ops = []
    for n in names:
        r = arm.call("PUT", arm.cluster_path(n), arm.cluster_body(n))
        expect_eq(r.status, 201, f"create {n} ({r!r})")
        ops.append(r.header("Azure-AsyncOperation"))
    for n, op in zip(names, ops):
        seen, final = arm.poll_operation(op, timeout=120, interval=0.05)
        expect_eq(seen[-1], "Succeeded", f"create {n} ({final})")


def race(ctx, arm, store, cs_url):
    rng = random.Random(EXTRA.seed)
    outcomes = {"nodepool": {}, "externalauth": {}}
    problems = []
    for wave in range(0, EXTRA.rounds, WAVE):
        names = [f"race{i}" for i in range(wave, min(wave + WAVE, EXTRA.rounds))]
        create_ready(arm, names)
        threads = []
        for i, n in enumerate(names):
            kind = "nodepool" if i % 2 == 0 else "externalauth"
            offset = rng.uniform(-0.005, 0.005)
            threads.append(threading.Thread(target=race_one,
                                            args=(arm, n, kind, offset, outcomes[kind], problems)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(f"{EXTRA.rounds} races: node pools {outcomes['nodepool']}, external auths {outcomes['externalauth']}",
          flush=True)
    expect(not problems, f"{len(problems)} races ended badly:\n" + "\n".join(problems[:20]))
    wait_until(lambda: arm.call("GET", arm.rg_path() + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
               .body.get("value") == [], timeout=60, what="every cluster gone")
    ctx.check(store, cs_url)


def test_sqlite(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="instant")
    arm = Arm(endpoint)
    arm.register()
    race(ctx, arm, None, cs_url)


def test_postgres(ctx):
    server = pg.PgServer()
    ctx.closers.append(server.close)
    store = server.url()
    endpoint, cs_url, _ = ctx.serve(profile="instant", extra=["--store", store])
    arm = Arm(endpoint)
    arm.register()
    race(ctx, arm, store, cs_url)


if __name__ == "__main__":
    if pg.find_binaries() is None:
        run_tests([test_sqlite])
    else:
        run_tests([test_sqlite, test_postgres])
