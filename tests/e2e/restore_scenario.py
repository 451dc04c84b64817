"""A store restored from an older copy, as an operator restores it after losing the database: the one
scenario both engines run (restore.py on SQLite, ../e2e_pg/restore.py on PostgreSQL), and what hcprp
must make of it (docs/backup.md).

Before the backup: `keep` (with node pool `np1`) and `doomed` are Succeeded; `creating` is being created
and `deleting` deleted. After it: `late` (with `np1`) and `keep/np2` are created, `doomed` is deleted,
and `creating` and `deleting` finish. The store is then put back to the backup and hcprp started on it:

  (a) `late`, `late/np1` and `keep/np2` exist in the Cluster Service only: held (never deleted) and
      reported by `hcprp check`, until the operator resolves them (here: deletes them);
  (b) `creating` ends Succeeded and `deleting`'s delete Succeeded (its documents gone), each polled at
      the status URL the client had before the backup;
  (c) `doomed` is removed with its children, as its delete had finished;
  (d) `late`'s create, polled at its status URL, is 404 (unknown to the restored store).

Then nothing is stuck, nothing is left in the Cluster Service or the simulated Azure but what the
store holds, and `hcprp check` is clean.
"""

import json
import subprocess
import time
import urllib.parse

import e2e
from e2e import Arm, CsClient, expect, expect_eq, wait_until


class Deployment:
    """What a scenario needs of a deployment: start and stop hcprp on its store, back the store up
    and restore the backup. Subclasses: SQLite (restore.py), PostgreSQL (../e2e_pg/restore.py)."""

    def start(self):  # -> (ARM endpoint, Cluster Service URL)
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def backup(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    store = None


def rebased(arm, url):
    """A status URL the client got before a restart, on the endpoint it calls now."""
    parts = urllib.parse.urlsplit(url)
    return arm.endpoint + parts.path + ("?" + parts.query if parts.query else "")


def succeeded(arm, url, what, timeout=60):
    seen, final = arm.poll_operation(rebased(arm, url), timeout=timeout, interval=0.1)
    expect_eq(seen[-1], "Succeeded", f"{what} ({final})")


def create(arm, path, body):
    r = arm.call("PUT", path, body)
    expect_eq(r.status, 201, f"PUT {path} ({r!r})")
    return r.header("Azure-AsyncOperation")


def delete(arm, path):
    r = arm.call("DELETE", path)
    expect_eq(r.status, 202, f"DELETE {path} ({r!r})")
    return r.header("Azure-AsyncOperation")


def cs_objects(cs, arm):
    """href -> (kind, ARM-side name) of every Cluster Service cluster and node pool of the subscription."""
    out = {}
    for c in cs.clusters(arm.subscription)["items"]:
        name = c.get("azure", {}).get("resource_name") or c.get("name")
        out[c["href"]] = ("cluster", name)
        r = cs.call("GET", c["href"] + "/node_pools")
        if r.status == 404:  # deleted since the list
            del out[c["href"]]
            continue
        expect_eq(r.status, 200, f"node pools of {name}")
        for p in r.body.get("items", []):
            out[p["href"]] = ("nodepool", name + "/" + (p.get("azure", {}).get("resource_name") or p.get("name")))
    return out


def run_check(deployment, cs_url):
    r = subprocess.run([e2e.ARGS.hcprp, "check", "--store", deployment.store, "--clusters-service", cs_url,
                        "--gc-window-seconds", "0", "--json", "--tls-dir", deployment.ctx.tls.dir],
                       capture_output=True, timeout=120)
    out = r.stdout.decode("utf-8", "replace")
    lines = out.strip().splitlines()
    expect(lines, f"hcprp check printed nothing (exit {r.returncode}): {r.stderr.decode()[-2000:]}")
    return r.returncode, json.loads(lines[-1])


def before_backup(arm):
    """Returns the status URLs the client holds at the backup."""
    keep = create(arm, arm.cluster_path("keep"), arm.cluster_body("keep"))
    doomed = create(arm, arm.cluster_path("doomed"), arm.cluster_body("doomed"))
    going = create(arm, arm.cluster_path("deleting"), arm.cluster_body("deleting"))
    for url, what in ((keep, "keep"), (doomed, "doomed"), (going, "deleting")):
        succeeded(arm, url, f"create of {what}")
    pools = [create(arm, arm.nodepool_path(c, "np1"), arm.nodepool_body(c)) for c in ("keep", "doomed")]
    for url, what in zip(pools, ("keep/np1", "doomed/np1")):
        succeeded(arm, url, what)
    urls = {"creating": create(arm, arm.cluster_path("creating"), arm.cluster_body("creating")),
            "deleting": delete(arm, arm.cluster_path("deleting"))}
    for name, url in urls.items():
        expect(arm.call("GET", url).body["status"] not in ("Succeeded", "Failed", "Canceled"),
               f"{name}'s operation is in flight at the backup")
    return urls


def after_backup(arm, urls):
    """Work after the backup; returns the status URL of `late`'s create."""
    late = create(arm, arm.cluster_path("late"), arm.cluster_body("late"))
    d = delete(arm, arm.cluster_path("doomed"))
    np2 = create(arm, arm.nodepool_path("keep", "np2"), arm.nodepool_body("keep"))
    succeeded(arm, late, "create of late")
    succeeded(arm, create(arm, arm.nodepool_path("late", "np1"), arm.nodepool_body("late")), "late/np1")
    succeeded(arm, np2, "keep/np2")
    succeeded(arm, d, "delete of doomed")
    succeeded(arm, urls["creating"], "create of creating")
    succeeded(arm, urls["deleting"], "delete of deleting")
    return late


def run(ctx, deployment):
    endpoint, cs_url = deployment.start()
    arm = Arm(endpoint)
    arm.register()
    urls = before_backup(arm)
    t = time.monotonic()
    deployment.backup()
    print(f"backup took {time.monotonic() - t:.1f}s", flush=True)
    late_url = after_backup(arm, urls)
    before = cs_objects(CsClient(cs_url), arm)
    deployment.stop()
    t = time.monotonic()
    deployment.restore()
    print(f"restore took {time.monotonic() - t:.1f}s", flush=True)

    t = time.monotonic()
    endpoint, cs_url = deployment.start()
    arm.endpoint = endpoint.rstrip("/")
    cs = CsClient(cs_url)
    # (b) the operations the restored store had in flight end as they ended in the Cluster Service.
    succeeded(arm, urls["creating"], "create of creating after the restore")
    succeeded(arm, urls["deleting"], "delete of deleting after the restore")
    expect_eq(arm.call("GET", arm.cluster_path("deleting")).status, 404, "deleting after the restore")
    g = arm.call("GET", arm.cluster_path("creating"))
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "creating after the restore")
    # (c) the resource deleted after the backup goes, children too.
    wait_until(lambda: arm.call("GET", arm.cluster_path("doomed")).status == 404, timeout=30,
               what="doomed to be removed")
    expect_eq(arm.call("GET", arm.nodepool_path("doomed", "np1")).status, 404, "doomed/np1")
    settled = time.monotonic() - t
    # (d) an operation the restored store never knew.
    expect_eq(arm.call("GET", rebased(arm, late_url)).status, 404, "late's create status after the restore")
    # (a) objects the store lacks: held, never deleted, reported.
    expect_eq(arm.call("GET", arm.cluster_path("late")).status, 404, "late after the restore")
    lost = {h: v for h, v in before.items() if v[1] in ("late", "late/np1", "keep/np2")}
    expect_eq(sorted(v[1] for v in lost.values()), ["keep/np2", "late", "late/np1"], "objects made after the backup")

    def reported():
        rc, report = run_check(deployment, cs_url)
        held = {v["subject"] for v in report["violations"] if "held" in v["message"]}
        return rc, report, held
    wait_until(lambda: reported()[2] == set(lost), timeout=30, what="the objects made after the backup to be held")
    rc, report, held = reported()
    expect_eq(rc, 1, "hcprp check exit while objects are held")
    others = [v for v in report["violations"] if v["subject"] not in lost]
    expect_eq(others, [], "violations besides the held objects")
    now = cs_objects(cs, arm)
    for href in lost:
        expect(href in now, f"held object {lost[href][1]} is still in the Cluster Service")
    print(f"settled {settled:.1f}s after the start; held: {sorted(v[1] for v in lost.values())}", flush=True)

    # The operator resolves them (here: deletes them from the Cluster Service); then all is clean.
    for href, (kind, name) in lost.items():
        if kind == "cluster" or lost.get(href.split("/node_pools/")[0], ("", ""))[0] != "cluster":
            r = cs.call("DELETE", href)
            expect(r.status in (202, 204, 404), f"operator's delete of {name}: {r!r}")
    wait_until(lambda: not set(lost) & set(cs_objects(cs, arm)), timeout=60, what="the held objects to go")
    remaining = sorted(v[1] for v in cs_objects(cs, arm).values())
    expect_eq(remaining, ["creating", "keep", "keep/np1"], "Cluster Service objects at the end")
    wait_until(lambda: run_check(deployment, cs_url)[0] == 0, timeout=60, what="hcprp check to be clean")
    rc, report = run_check(deployment, cs_url)
    expect_eq(report["violations"], [], "hcprp check at the end")
    return endpoint, cs_url
