#!/usr/bin/env python3
"""A frontend cut off from the Cluster Service while it keeps running.

PostgreSQL, the Cluster Service simulator, one frontend and one backend each in their own network
namespace. While every packet between the frontend and the Cluster Service is dropped, every request
answers within BOUND seconds, never with a 5xx other than 503 with Retry-After and never a hang: an update,
recorded in the store before its Cluster Service call, is sent by the backend once the frontend has not
confirmed it for a few seconds (update recovery), so it is accepted (202), or 503 when the backend could not
take it over in time; a create or a delete, durable in the store first, is accepted and the backend carries
it out; reads the store answers alone still answer 200. Healed, the same
requests are accepted and their operations succeed; every acknowledged operation ends, `hcprp check` is
clean and, once everything is deleted, nothing is left anywhere.

test_deletes_racing_create_recovery runs the same with a client creating and deleting clusters across the
cut: a create whose Cluster Service request the frontend gave up on must not land after the heal and leave
an object behind once its cluster is deleted (docs/partitions.md).

Exits 77 (skipped) when not root or when the PostgreSQL server binaries are absent.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import audit  # noqa: E402
import deployment  # noqa: E402
import netns  # noqa: E402
from deployment import Load, e2e, pg  # noqa: E402
from e2e import Arm, expect, expect_eq, run_tests, wait_until  # noqa: E402

SUBSCRIPTION = "9a771710-0000-4000-8000-0000000000c5"
# Seconds: an answer later than this is a hang. The Cluster Service client makes 4 attempts (5 s to
# connect, 10 s for an answer, backoff up to 2 s), so a frontend cut off answers within about 25-40 s;
# ARM gives a resource provider 60 s.
BOUND = 45.0
RECOVERY = 15


def timed(arm, method, path, body=None):
    start = time.monotonic()
    r = arm.call(method, path, body, timeout=BOUND + 10)
    return r, time.monotonic() - start


def test_frontend_cut_from_cluster_service(ctx):
    run_cut(ctx, deletes=False)


def test_deletes_racing_create_recovery(ctx):
    """A create whose Cluster Service request the frontend gave up on, and whose cluster is deleted before
    the heal, leaves no Cluster Service object behind: the frontend reset the request's connection, so
    the request is not delivered after the heal, and an object that a late request made anyway is deleted
    by the backend at its first event (not by the orphan collector an hour later)."""
    run_cut(ctx, deletes=True)


def run_cut(ctx, deletes):
    with netns.Net() as net:
        # A create the frontend could not send is repeated by the backend after --create-recovery-seconds
        # (120 s by default: a frontend may still be sending it); shortened so the test ends in time.
        d = deployment.Deployment(ctx, net, frontends=1, backends=1,
                                  backend_extra=("--create-recovery-seconds", str(RECOVERY)))
        fnode, ep, _ = d.frontends[0]
        audit.install(d.pg)
        stop = threading.Event()
        load = Load(1, ep, SUBSCRIPTION, 2, stop, call_timeout=BOUND + 10, deletes=deletes)
        arm = load.arm  # operations are visible to their caller: the verdict polls them as this one
        arm.register()
        created = []
        for name in ("before", "parent", "doomed"):
            r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name))
            expect_eq(r.status, 201, f"create of {name} before the cut ({r!r})")
            created.append((name, r.header("Azure-AsyncOperation")))
        for name, url in created:
            seen, final = arm.poll_operation(url, timeout=60, interval=0.2)
            expect_eq(seen[-1], "Succeeded", f"create of {name} before the cut ({final})")
        if deletes:  # the client runs across the cut
            load.start()
            time.sleep(2)

        mine = ["before", "parent"]  # clusters this thread made, added to the load's once it stopped
        net.cut(fnode, d.cs_node)
        cut_at = time.monotonic()
        # Each is durable in the store first and the backend (which still reaches the Cluster Service)
        # carries it out: 201/202. An update waits for the frontend's call to time out: the backend has
        # sent it by then (202), or 503 when it could not.
        requests = [
            ("update", "PATCH", arm.cluster_path("before"), {"tags": {"cut": "yes"}}, 202),
            ("create", "PUT", arm.cluster_path("during"), arm.cluster_body("during"), 201),
            ("node pool create", "PUT", arm.nodepool_path("parent", "np1"), arm.nodepool_body("parent"), 201),
            ("delete", "DELETE", arm.cluster_path("doomed"), None, 202)]
        answers = [None] * len(requests)

        def send(i):
            _, method, path, body, _ = requests[i]
            answers[i] = timed(arm, method, path, body)
        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for (what, _, _, _, accepted), (r, took) in zip(requests, answers):
            print(f"cut: {what} answered {r.status} Retry-After={r.header('Retry-After')} in {took:.2f}s",
                  flush=True)
            expect(took < BOUND, f"{what} took {took:.1f}s (bound {BOUND}s)")
            if r.status == 503:
                expect(r.header("Retry-After"), f"{what}: 503 without Retry-After")
                continue
            expect_eq(r.status, accepted, f"{what} while cut off from the Cluster Service ({r!r})")
            load.ops.append((f"{what} during the cut", r.header("Azure-AsyncOperation")))
            if what == "create":
                mine.append("during")
        g, took = timed(arm, "GET", arm.cluster_path("before"))
        print(f"cut: read answered {g.status} in {took:.2f}s", flush=True)
        expect_eq(g.status, 200, f"read while cut off ({g!r})")
        time.sleep(max(0.0, 8 - (time.monotonic() - cut_at)))

        net.heal(fnode, d.cs_node)
        healed_at = time.monotonic()

        def accepted():
            r = arm.call("PATCH", arm.cluster_path("before"), {"tags": {"cut": "healed"}}, timeout=BOUND)
            return r if r.status == 202 else None
        r = wait_until(accepted, timeout=30, interval=0.1, what="an update to be accepted after the heal")
        print(f"healed: update accepted {time.monotonic() - healed_at:.2f}s after the heal", flush=True)
        seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.2)
        expect_eq(seen[-1], "Succeeded", f"update after the heal ({final})")
        r = arm.call("PUT", arm.cluster_path("after"), arm.cluster_body("after"))
        expect_eq(r.status, 201, f"create after the heal ({r!r})")
        load.ops.append(("create after", r.header("Azure-AsyncOperation")))
        mine.append("after")
        time.sleep(2)
        stop.set()
        if deletes:
            load.join(timeout=40)
        print(f"load answers: {load.statuses}, slowest {load.max_latency:.2f}s", flush=True)
        expect_eq(load.bad, [], "answers that were 5xx without Retry-After, or hangs")
        load.live += mine
        deployment.verdict(d, [load])


if __name__ == "__main__":
    netns.skip_unless_root()
    pg.skip_unless_available()
    run_tests([test_frontend_cut_from_cluster_service, test_deletes_racing_create_recovery])
