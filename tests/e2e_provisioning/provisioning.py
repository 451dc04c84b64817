#!/usr/bin/env python3
"""The provisioning engine behind `hcprp serve --provisioner engine`, through the ARM API and hcpctl:
a cluster and node pool reach Succeeded with conditions that ARM GET and hcpctl show; deletions whose identities are gone (the customer deletes the cluster's
managed identities, or strips one of its permissions, then deletes the cluster): the deletion ends
Succeeded after the orphan threshold, with nothing left in the simulated Azure or the simulator."""

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

import e2e  # noqa: E402
from e2e import CS_PREFIX, Arm, CsClient, expect, expect_eq, run_tests, wait_until  # noqa: E402

SCALE = "0.05"
# Before scaling, like every simulated duration: 100 s * 0.05 = 5 s of failing deletions.
ORPHAN_THRESHOLD = "100"
SUBSCRIPTION = "00000000-0000-4000-8000-0000000000e6"
RG = "prov-rg"


def serve(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale=SCALE,
                                    extra=("--provisioner", "engine", "--orphan-threshold-seconds",
                                           ORPHAN_THRESHOLD))
    return endpoint, CsClient(cs_url)


def hcpctl(endpoint, *args, timeout=120):
    argv = [e2e.ARGS.hcpctl, "--endpoint", endpoint, "-s", SUBSCRIPTION, "-g", RG, "--max-poll-interval", "0.2",
            *args]
    r = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def cluster_href(cs, name):
    items = cs.clusters(SUBSCRIPTION).get("items", [])
    hrefs = [c["href"] for c in items if c.get("name") == name]
    expect_eq(len(hrefs), 1, f"Cluster Service clusters named {name}")
    return hrefs[0]


def azure_resources(cs, href):
    r = cs.call("GET", href + "/azure_resources")
    expect_eq(r.status, 200, f"azure_resources of {href} ({r!r})")
    return r.body


def conditions_of(obj):
    return {c.get("type"): c for c in (obj.get("status") or {}).get("conditions", [])}


def all_resources(cs):
    r = cs.call("GET", "/control/azure/resources")
    expect_eq(r.status, 200, f"/control/azure/resources ({r!r})")
    body = r.body
    return body.get("items", []) if isinstance(body, dict) else body


def engine_resources(cs):
    """The simulated resources the engine created (customer networks and identities excluded)."""
    return [r for r in all_resources(cs) if "/resourcegroups/arohcp-" in r["id"].lower()]


def create_cluster_and_pool(ctx, endpoint, cs, name):
    rc, out, err = hcpctl(endpoint, "subscription", "register")
    expect_eq(rc, 0, f"subscription register: {out} {err}")
    rc, out, err = hcpctl(endpoint, "cluster", "create", name, timeout=150)
    expect_eq(rc, 0, f"cluster create: {out} {err}")
    rc, out, err = hcpctl(endpoint, "nodepool", "create", "np1", "--cluster", name, "--replicas", "2", timeout=150)
    expect_eq(rc, 0, f"nodepool create: {out} {err}")
    href = cluster_href(cs, name)
    c = cs.call("GET", href).body
    expect_eq(c["status"]["state"], "ready", "Cluster Service state after create")
    conds = wait_until(lambda: (lambda cs_: cs_ if cs_.get("AzureIdentityValid") else None)(conditions_of(
        cs.call("GET", href).body)), 10, what="cluster conditions in status")
    expect_eq(conds["AzureIdentityValid"]["status"], "True", "AzureIdentityValid after create")
    for c in conds.values():
        expect(c.get("status") in ("True", "False", "Unknown") and c.get("lastTransitionTime"),
               f"malformed condition {c}")
    return href


def stored_conditions(ctx, condition_type):
    """The clusterServiceStatus of a stored resource document holding `condition_type`, as text, or None."""
    db = sqlite3.connect(ctx.db, timeout=5)
    try:
        for row in db.execute("SELECT * FROM documents"):
            text = " ".join(str(x) for x in row)
            at = text.find('"clusterServiceStatus"')
            if at >= 0 and condition_type in text[at:at + 4000]:
                return text[at:at + 4000]
    finally:
        db.close()
    return None


# Conditions of a resource whose engine conditions are all True.
READY = {"Available": ("True", "AsExpected"), "Progressing": ("False", "AsExpected"),
         "Degraded": ("False", "AsExpected")}


def arm_conditions(body):
    """properties.status.conditions of an ARM resource as {type: (status, reason)}, checked for the fields
    the API requires."""
    conds = (body.get("properties", {}).get("status") or {}).get("conditions") or []
    for c in conds:
        for field in ("type", "status", "reason", "message", "lastTransitionTime"):
            expect(field in c, f"condition without {field}: {c}")
    return {c["type"]: (c["status"], c["reason"]) for c in conds}


def watch_arm(arm, path, until_state, timeout):
    """ARM GETs of `path` every 20 ms until provisioningState is `until_state`; returns every body seen."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = arm.call("GET", path)
        if r.status == 200:
            seen.append(r.body)
            if r.body["properties"].get("provisioningState") == until_state:
                return seen
        time.sleep(0.02)
    raise e2e.TestFailure(f"{path} never reached {until_state}: last {seen[-1:] if seen else None}")


def stored_engine_conditions(ctx, resource_id):
    """properties.clusterServiceStatus.conditions of the stored resource document of `resource_id` as
    {type: status}, or None when the document or its conditions are missing."""
    db = sqlite3.connect(ctx.db, timeout=5)
    try:
        for row in db.execute("SELECT * FROM documents"):
            for col in row:
                if not isinstance(col, str) or '"clusterServiceStatus"' not in col:
                    continue
                try:
                    props = json.loads(col).get("properties", {})
                except ValueError:
                    continue
                if props.get("resourceId", "").lower() != resource_id.lower():
                    continue
                conds = (props.get("clusterServiceStatus") or {}).get("conditions")
                return {c["type"]: c["status"] for c in conds} if conds else None
    finally:
        db.close()
    return None


def identities_of(cs, name):
    ids = sorted({r["id"] for r in all_resources(cs)
                  if r.get("type", "").lower() == "microsoft.managedidentity/userassignedidentities"
                  and f"/{name}-" in r["id"]})
    expect(ids, f"no managed identities of {name} in the simulated Azure")
    return ids


def delete_and_expect_clean(ctx, endpoint, cs, name, href, budget):
    start = time.monotonic()
    rc, out, err = hcpctl(endpoint, "cluster", "delete", name, timeout=budget)
    took = time.monotonic() - start
    expect_eq(rc, 0, f"cluster delete: {out} {err}")
    expect(took < budget, f"deletion took {took:.1f}s")
    expect_eq(cs.call("GET", href).status, 404, "the Cluster Service cluster after deletion")
    left = wait_until(lambda: engine_resources(cs) == [] or None, 10, what="the managed resource group gone")
    expect(left, "resources left")
    rc, out, err = hcpctl(endpoint, "cluster", "show", name)
    expect(rc != 0, f"cluster show after delete exited 0: {out}")
    report = ctx.check()
    expect_eq(report.get("violations", []), [], "hcprp check violations")
    return took


def test_cluster_and_nodepool_succeed_with_conditions(ctx):
    endpoint, cs = serve(ctx)
    href = create_cluster_and_pool(ctx, endpoint, cs, "ok")
    view = azure_resources(cs, href)
    text = str(view)
    for needed in ("AzureIdentityValid", "MachinesReady", "VMReady"):
        expect(needed in text, f"{needed} missing from azure_resources: {text[:2000]}")
    vms = [r for r in engine_resources(cs) if r.get("type", "").lower() == "microsoft.compute/virtualmachines"]
    expect_eq(len(vms), 2, "virtual machines of a 2-replica node pool")
    expect(all(r.get("provisioningState") == "Succeeded" for r in vms), f"VMs not Succeeded: {vms}")
    # Node pool conditions reach the Cluster Service object too.
    pools = cs.call("GET", href + "/node_pools").body.get("items", [])
    expect_eq(len(pools), 1, "node pools")
    expect("MachinesReady" in conditions_of(pools[0]), f"node pool conditions: {pools[0].get('status')}")
    # The backend copies the engine's conditions into the resource document (clusterServiceStatus).
    synced = wait_until(lambda: stored_conditions(ctx, "AzureIdentityValid"), 10,
                        what="conditions in the stored resource document")
    expect('"status":"True"' in synced.replace(" ", ""), f"stored conditions: {synced[:500]}")
    # ARM GET renders them once everything is ready: the backend synced the engine's final conditions
    # (every one True) when the operations ended, not only those seen while they ran.
    arm = Arm(endpoint, subscription=SUBSCRIPTION, resource_group=RG)
    for path in (arm.cluster_path("ok"), arm.nodepool_path("ok", "np1")):
        final = stored_engine_conditions(ctx, path)
        expect(final and set(final.values()) == {"True"}, f"stored conditions of {path} after create: {final}")
        r = arm.call("GET", path)
        expect_eq(r.status, 200, f"ARM GET {path} ({r!r})")
        expect_eq(arm_conditions(r.body), READY, f"conditions of {path} after create")
    delete_and_expect_clean(ctx, endpoint, cs, "ok", href, budget=90)


def test_deleted_identities_do_not_block_deletion(ctx):
    endpoint, cs = serve(ctx)
    href = create_cluster_and_pool(ctx, endpoint, cs, "gone")
    for rid in identities_of(cs, "gone"):
        r = cs.call("POST", "/control/azure/identities/delete", {"resource_id": rid})
        expect(r.status in (200, 204), f"identity delete {rid} ({r!r})")
    took = delete_and_expect_clean(ctx, endpoint, cs, "gone", href, budget=90)
    print(f"deletion with deleted identities took {took:.1f}s (threshold {float(ORPHAN_THRESHOLD) * float(SCALE)}s)")
    m = cs.call("GET", "/control/azure/metrics").body
    expect(m.get("orphaned_machines", 0) > 0 or m.get("orphaned_control_planes", 0) > 0,
           f"nothing was orphaned: {m}")
    expect(m.get("first_party_group_deletions", 0) >= 1, f"no first-party group deletion: {m}")


def test_identity_without_permissions_does_not_block_deletion(ctx):
    endpoint, cs = serve(ctx)
    href = create_cluster_and_pool(ctx, endpoint, cs, "noperm")
    capz = [i for i in identities_of(cs, "noperm") if i.endswith("-cluster-api-azure")]
    expect_eq(len(capz), 1, "the CAPZ identity")
    r = cs.call("POST", "/control/azure/identities/permissions", {"resource_id": capz[0], "granted": False})
    expect(r.status in (200, 204), f"permissions ({r!r})")
    delete_and_expect_clean(ctx, endpoint, cs, "noperm", href, budget=90)
    m = cs.call("GET", "/control/azure/metrics").body
    expect(m.get("credential_failures", 0) > 0, f"no credential failures seen: {m}")


def test_deletion_resumes_after_kill(ctx):
    """kill -9 in the middle of a deletion whose identities are gone: the engine resumes from its committed
    state and futures, and the deletion still ends with nothing left."""
    endpoint, cs = serve(ctx)
    href = create_cluster_and_pool(ctx, endpoint, cs, "crash")
    for rid in identities_of(cs, "crash"):
        expect(cs.call("POST", "/control/azure/identities/delete", {"resource_id": rid}).status in (200, 204),
               "identity delete")
    arm = Arm(endpoint, subscription=SUBSCRIPTION, resource_group=RG)
    r = arm.call("DELETE", arm.cluster_path("crash"))
    expect_eq(r.status, 202, f"ARM DELETE ({r!r})")
    time.sleep(2.5)  # inside the 5 s threshold: the engine has deletions failing on the missing identity
    ctx.procs[-1].kill()
    ctx.procs[-1].p.wait(timeout=10)
    endpoint, cs = serve(ctx)
    # The accepted operation carries on after the restart (same store, new port).
    status = urllib.parse.urlsplit(r.header("Azure-AsyncOperation"))
    arm.endpoint = endpoint  # the same caller (operation statuses belong to who started them)
    seen, final = arm.poll_operation(f"{endpoint}{status.path}?{status.query}", timeout=90, interval=0.2)
    expect_eq(seen[-1], "Succeeded", f"deletion after the restart ({final})")
    expect_eq(arm.call("GET", arm.cluster_path("crash")).status, 404, "ARM GET after the deletion")
    expect_eq(cs.call("GET", href).status, 404, "the Cluster Service cluster after deletion")
    wait_until(lambda: engine_resources(cs) == [], 10, what="the managed resource group gone")
    expect_eq(ctx.check().get("violations", []), [], "hcprp check violations")


def test_arm_conditions_move_through_creating_to_ready(ctx):
    """Through ARM GET (and hcpctl show) while the engine creates a cluster and a node pool at full demo
    timing: the engine's Creating conditions show as Progressing, then everything is Available."""
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="1", extra=("--provisioner", "engine"))
    arm = Arm(endpoint, subscription=SUBSCRIPTION, resource_group=RG)
    arm.register()
    for path, body in ((arm.cluster_path("watch"), arm.cluster_body("watch")),
                       (arm.nodepool_path("watch", "np1"), arm.nodepool_body("watch", replicas=2))):
        r = arm.call("PUT", path, body)
        expect_eq(r.status, 201, f"PUT {path} ({r!r})")
        seen = watch_arm(arm, path, "Succeeded", timeout=60)
        creating = [arm_conditions(b) for b in seen if arm_conditions(b).get("Progressing") == ("True", "Creating")]
        expect(creating, f"{path}: Progressing/Creating never seen in {[arm_conditions(b) for b in seen]}")
        expect_eq(creating[0].get("Available"), ("False", "Creating"), f"{path}: Available while creating")
        final = wait_until(lambda: (lambda b: b if arm_conditions(b) == READY else None)(
            arm.call("GET", path).body), 10, what=f"{path} conditions ready")
        expect(final, "final conditions")
        # The preview api-version has no status on clusters and node pools.
        preview = arm.call("GET", path, api_version="2024-06-10-preview")
        expect_eq(preview.status, 200, f"preview GET ({preview!r})")
        expect("status" not in preview.body["properties"], f"status in a preview body: {preview.body}")
    for args in (("cluster", "show", "watch"), ("nodepool", "show", "np1", "--cluster", "watch")):
        rc, out, err = hcpctl(endpoint, *args)
        expect_eq(rc, 0, f"hcpctl {' '.join(args)}: {err}")
        lines = out.splitlines()
        header = [i for i, line in enumerate(lines) if line.split()[:3] == ["CONDITION", "STATUS", "REASON"]]
        expect(header, f"no conditions table in hcpctl {' '.join(args)}: {out}")
        rows = {line.split()[0]: line.split()[1:3] for line in lines[header[0] + 1:] if line.strip()}
        expect_eq(rows.get("Available"), ["True", "AsExpected"], f"Available row of hcpctl {' '.join(args)}")
        expect_eq(sorted(rows), ["Available", "Degraded", "Progressing"], "condition rows")
    ctx.check()


def test_nodepool_deleted_with_deleted_identities(ctx):
    """A deletion whose identities are gone, for a node pool: the customer deletes the identities, then just the node pool; its machines
    are orphaned after the threshold and the delete ends Succeeded. Deleting the cluster afterwards leaves
    nothing in the simulated Azure."""
    endpoint, cs = serve(ctx)
    href = create_cluster_and_pool(ctx, endpoint, cs, "npgone")
    # A cluster keeps a node pool (its last one cannot be deleted): an empty second pool lets np1 go.
    rc, out, err = hcpctl(endpoint, "nodepool", "create", "np2", "--cluster", "npgone", "--replicas", "0", timeout=150)
    expect_eq(rc, 0, f"second nodepool create: {out} {err}")
    for rid in identities_of(cs, "npgone"):
        r = cs.call("POST", "/control/azure/identities/delete", {"resource_id": rid})
        expect(r.status in (200, 204), f"identity delete {rid} ({r!r})")
    arm = Arm(endpoint, subscription=SUBSCRIPTION, resource_group=RG)
    before = cs.call("GET", "/control/azure/metrics").body.get("orphaned_machines", 0)
    r = arm.call("DELETE", arm.nodepool_path("npgone", "np1"))
    expect_eq(r.status, 202, f"node pool DELETE ({r!r})")
    start = time.monotonic()
    # While the deletions fail, the node pool shows it through ARM.
    degraded = wait_until(lambda: (lambda b: b if arm_conditions(b).get("Degraded", ("",))[0] == "True" else None)(
        arm.call("GET", arm.nodepool_path("npgone", "np1")).body), 20, interval=0.05,
        what="the node pool Degraded while its deletions fail")
    expect_eq(degraded["properties"]["provisioningState"], "Deleting", "state while deletions fail")
    seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=90, interval=0.2)
    took = time.monotonic() - start
    expect_eq(seen[-1], "Succeeded", f"node pool deletion ({final})")
    threshold = float(ORPHAN_THRESHOLD) * float(SCALE)
    expect(took >= threshold - 0.5, f"node pool deleted in {took:.1f}s, before the {threshold}s threshold")
    print(f"node pool deletion with deleted identities took {took:.1f}s (threshold {threshold}s)")
    expect_eq(arm.call("GET", arm.nodepool_path("npgone", "np1")).status, 404, "ARM GET of the deleted node pool")
    m = cs.call("GET", "/control/azure/metrics").body
    expect_eq(m.get("orphaned_machines", 0) - before, 2, f"orphaned machines: {m}")
    # The cluster itself is still there; its machines' resources wait in the managed resource group.
    expect_eq(arm.call("GET", arm.cluster_path("npgone")).status, 200, "ARM GET of the cluster")
    vms = [x for x in engine_resources(cs) if x.get("type", "").lower() == "microsoft.compute/virtualmachines"]
    expect_eq(len(vms), 2, "orphaned virtual machines before the cluster deletion")
    delete_and_expect_clean(ctx, endpoint, cs, "npgone", href, budget=90)


if __name__ == "__main__":
    run_tests([test_cluster_and_nodepool_succeed_with_conditions, test_arm_conditions_move_through_creating_to_ready,
               test_deleted_identities_do_not_block_deletion, test_identity_without_permissions_does_not_block_deletion,
               test_nodepool_deleted_with_deleted_identities, test_deletion_resumes_after_kill])
