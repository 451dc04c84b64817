#!/usr/bin/env python3
"""Day 2 through ARM: a cluster created at a minor runs the z-stream the version selection picks; a release
published to the update service is listed by ARM, reaches the cluster by the event stream and rolls out; every
identity shows its principalId and clientId; the next minor, asked with the Azure SDK for Python, shows both
versions while it rolls out and then one; a node pool may not move ahead of its control plane (the real
service's message) and follows it with the Azure SDK for JavaScript; a minor no upgrade edge reaches is
refused with the real service's message; an upgrade made to fail shows the Cluster Service's reason while the
old version runs; other changes are taken while a control plane upgrades; a kill -9 in the middle of an upgrade
resumes it. Every run ends with `hcprp check` (its invariant 10 is about versions)."""

import json
import os
import shutil
import signal
import subprocess
import time

from e2e import Arm, CsClient, expect, expect_eq, http_request, run_tests, url_after, wait_until
from sdk import npm_install

SDK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk")
PYTHON = os.environ.get("HCPRP_SDK_PYTHON", "/usr/bin/python3")


def active(arm, path):
    r = arm.call("GET", path)
    expect_eq(r.status, 200, f"GET {path} ({r!r})")
    return [v["version"] for v in r.body["properties"].get("status", {}).get("activeVersions", [])]


def condition(arm, path, kind):
    r = arm.call("GET", path)
    return next((c for c in r.body["properties"]["status"]["conditions"] if c["type"] == kind), {})


def create(arm, path, body):
    r = arm.call("PUT", path, body)
    expect_eq(r.status, 201, f"PUT {path} ({r!r})")
    seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=90, interval=0.1)
    expect_eq(seen[-1], "Succeeded", f"create of {path} ({final})")


def watch_rollout(arm, path, old, new, timeout=90):
    """Polls activeVersions until only `new` runs; returns every distinct list seen. Fails when it shows
    anything but [old], [new, old] and [new]."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        now = active(arm, path)
        if not seen or seen[-1] != now:
            expect(now in ([old], [new, old], [new]), f"{path}: activeVersions {now} during {old} -> {new}")
            seen.append(now)
        if now == [new]:
            return seen
        expect(time.monotonic() < deadline, f"{path}: rollout {old} -> {new} not done in {timeout}s: {seen}")
        time.sleep(0.05)


def publish(cs, version, groups=("candidate", "fast", "stable")):
    r = cs.call("POST", "/control/versions", {"version": version, "channel_groups": list(groups)})
    expect_eq(r.status, 201, f"publish {version} ({r!r})")
    return time.monotonic()


def sdk_env(ctx, arm):
    return dict(os.environ, HCPRP_TLS_CA=ctx.tls.ca, HCPRP_TLS_CERT=ctx.tls.client_cert,
                HCPRP_TLS_KEY=ctx.tls.client_key, NODE_EXTRA_CA_CERTS=ctx.tls.ca, HCPRP_API_VERSION="2026-10-01",
                HCPRP_SUBSCRIPTION=arm.subscription, HCPRP_TENANT=arm.tenant, HCPRP_CLIENT_ID=arm.client_id)


def sdk_patch(argv, cwd, env, what):
    r = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=180, env=env, stdin=subprocess.DEVNULL)
    out = r.stdout.decode("utf-8", "replace")
    expect_eq(r.returncode, 0, f"{what}: {out[-2000:]} {r.stderr.decode('utf-8', 'replace')[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def test_versions_follow_releases_and_upgrades(ctx):
    work = npm_install(ctx)
    shutil.copy(os.path.join(SDK_DIR, "update.mjs"), work)
    # No periodic version pass within the test: a release reaches clusters through the event stream.
    endpoint, cs_url, serve = ctx.serve(profile="demo", time_scale="1", extra=["--version-resync-seconds", "3600"])
    metrics_url = serve.wait_line(url_after("metrics:"))
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    cluster = arm.cluster_path("up1")
    create(arm, cluster, arm.cluster_body("up1"))
    # 4.20 in the stable group: the release before the newest (4.20.15).
    expect_eq(active(arm, cluster), ["4.20.14"], "the z-stream a cluster created at 4.20 runs")
    # Every identity shows who it is, as the managed-identity service (the simulated Azure) knows it.
    identities = arm.call("GET", cluster).body["identity"]["userAssignedIdentities"]
    for key, ids in identities.items():
        expect(len(ids.get("principalId", "")) == 36 and len(ids.get("clientId", "")) == 36,
               f"identity {key}: {ids}")
    expect_eq(len({ids["clientId"] for ids in identities.values()}), len(identities), "distinct client IDs")

    published = publish(cs, "4.20.16")
    raised = wait_until(lambda: cs.clusters(arm.subscription)["items"][0]["version"]["id"] == "openshift-v4.20.15"
                        and time.monotonic(), timeout=10, interval=0.01, what="the desired version to rise")
    print(f"release to desired version: {(raised - published) * 1000:.0f} ms (polled every 10 ms)")
    listed = arm.call("GET", f"/subscriptions/{arm.subscription}/providers/Microsoft.RedHatOpenShift/locations/"
                             "eastus/hcpOpenShiftVersions")
    expect("4.20.16" in [v["name"] for v in listed.body.get("value", [])], f"ARM lists the release: {listed!r}")
    seen = watch_rollout(arm, cluster, "4.20.14", "4.20.15")
    print(f"automatic z-stream rollout: {seen}")

    pool = arm.nodepool_path("up1", "np1")
    body = arm.nodepool_body("up1")
    body["properties"]["version"]["id"] = "4.20.15"
    create(arm, pool, body)
    ahead = arm.call("PATCH", pool, {"properties": {"version": {"id": "4.21.2"}}})
    expect_eq(ahead.status, 400, f"node pool ahead of its control plane ({ahead!r})")
    err = ahead.body["error"]
    expect_eq(err["code"], "InvalidRequestContent", "error code")
    expect_eq(err["target"], "properties.version.id", "error target")
    expect("invalid node pool version 4.21.2: cannot exceed control plane version 4.20.15" in err["message"],
           f"error message: {err}")
    expect_eq(active(arm, pool), ["4.20.15"], "the refused node pool's version")

    # The next minor with the Python SDK: the operation ends once the upgrade is accepted, the rollout after.
    done = sdk_patch([PYTHON, os.path.join(SDK_DIR, "update.py"), endpoint, cluster,
                      json.dumps({"properties": {"version": {"id": "4.21"}}})], SDK_DIR, sdk_env(ctx, arm),
                     "Python SDK cluster upgrade")
    expect_eq(done["properties"]["provisioningState"], "Succeeded", "cluster upgrade operation")
    expect_eq(done["properties"]["version"]["id"], "4.21", "cluster version.id")
    seen = watch_rollout(arm, cluster, "4.20.15", "4.21.2")
    expect(["4.21.2", "4.20.15"] in seen, f"both versions shown while the control plane upgrades: {seen}")

    # The node pool follows with the JavaScript SDK: its machines roll, new before old.
    sdk_patch(["node", "update.mjs", endpoint, pool, json.dumps({"properties": {"version": {"id": "4.21.2"}}})],
              work, sdk_env(ctx, arm), "JavaScript SDK node pool upgrade")
    seen = watch_rollout(arm, pool, "4.20.15", "4.21.2")
    expect(["4.21.2", "4.20.15"] in seen, f"both versions shown while the machines roll: {seen}")

    # The backend's metrics: the upgrades it saw complete, the clusters by version.
    metrics = http_request("GET", metrics_url).raw
    for kind, least in (("cluster", 2), ("node_pool", 1)):
        count = next((float(line.split()[-1]) for line in metrics.splitlines()
                      if line.startswith(f'hcprp_backend_upgrade_seconds_count{{kind="{kind}"}}')), 0)
        expect(count >= least, f"{kind} upgrades recorded: {count}")
    publish(cs, "4.22.6", ("candidate",))  # a release for no stable cluster: a version pass, nothing raised
    wait_until(lambda: 'hcprp_cluster_versions{version="4.21.2",state="completed"} 1' in
               http_request("GET", metrics_url).raw, timeout=10,
               what="the version gauge")
    ctx.check()


def test_failed_and_interrupted_upgrades(ctx):
    endpoint, cs_url, serve = ctx.serve(profile="demo", time_scale="2")
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    cluster = arm.cluster_path("up2")
    create(arm, cluster, arm.cluster_body("up2"))
    expect_eq(active(arm, cluster), ["4.20.14"], "version after create")

    # No upgrade edge from what runs into 4.21's channel: refused as the real service refuses it, nothing kept.
    def set_edges(withdrawn):
        for to in ("4.21.0", "4.21.1", "4.21.2", "4.21.3"):
            r = cs.call("POST", "/control/versions/edges", {"from": "4.20.14", "to": to, "withdrawn": withdrawn})
            expect(r.status in (200, 201), f"edge 4.20.14 -> {to} ({r!r})")
    set_edges(True)
    r = arm.call("PATCH", cluster, {"properties": {"version": {"id": "4.21"}}})
    expect_eq(r.status, 400, f"PATCH to a minor no edge reaches ({r!r})")
    expect_eq(r.body["error"].get("target"), "properties.version.id", f"error target ({r.body})")
    expect(r.body["error"]["message"].startswith('Invalid value: "4.21": no upgrade path to update channel '
                                                 '"stable-4.21" is currently available for this cluster'),
           f"error message: {r.body['error']}")
    expect_eq(arm.call("GET", cluster).body["properties"]["version"]["id"], "4.20", "version.id after the refusal")
    set_edges(False)

    r = cs.call("POST", "/control/faults/provisioning", {"count": 1, "kinds": ["Cluster"], "operations": ["upgrade"],
                                                         "code": "OCM4242", "message": "payload unavailable"})
    expect_eq(r.status, 201, f"fault rule ({r!r})")
    r = arm.call("PATCH", cluster, {"properties": {"version": {"id": "4.21"}}})
    expect_eq(r.status, 202, f"PATCH to 4.21 ({r!r})")
    seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60, interval=0.05)
    # Accepted before it failed (the usual order), or failed before the backend saw it accepted.
    expect(seen[-1] == "Succeeded" or final.get("error", {}).get("code") == "OCM4242",
           f"the upgrade's operation: {seen} {final}")
    degraded = wait_until(lambda: (c := condition(arm, cluster, "Degraded")).get("status") == "True" and c,
                          timeout=60, what="the failed upgrade to show")
    expect_eq(degraded["reason"], "OCM4242", "Degraded reason")
    expect_eq(degraded["message"], "payload unavailable", "Degraded message")
    expect_eq(active(arm, cluster), ["4.20.14"], "the old version still runs")

    # Again, and kill -9 while the control plane upgrades: the new process resumes it.
    r = arm.call("PATCH", cluster, {"properties": {"version": {"id": "4.21"}}})
    expect_eq(r.status, 202, f"PATCH to 4.21 again ({r!r})")
    wait_until(lambda: active(arm, cluster) == ["4.21.2", "4.20.14"], timeout=30, interval=0.05,
               what="the retried upgrade to start")
    # Other changes are taken while the control plane upgrades, as the real service takes them.
    r = arm.call("PATCH", cluster, {"properties": {"nodeDrainTimeoutMinutes": 33}})
    expect_eq(r.status, 202, f"PATCH during the upgrade ({r!r})")
    seen, final = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=30, interval=0.05)
    expect_eq(seen[-1], "Succeeded", f"the change made during the upgrade: {seen} {final}")
    expect_eq(arm.call("GET", cluster).body["properties"]["nodeDrainTimeoutMinutes"], 33, "nodeDrainTimeoutMinutes")
    serve.kill(signal.SIGKILL)
    serve.p.wait(timeout=10)
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="2")
    arm = Arm(endpoint, arm.subscription, arm.tenant, arm.client_id)
    seen = watch_rollout(arm, cluster, "4.20.14", "4.21.2")
    print(f"after the restart: {seen}")
    wait_until(lambda: condition(arm, cluster, "Degraded").get("status") == "False", timeout=30,
               what="Degraded to clear")
    items = CsClient(cs_url).clusters(arm.subscription)["items"]
    expect_eq([e["version"] for e in items[0]["status"]["version_history"]][:2], ["4.21.2", "4.20.14"],
              "the Cluster Service's version history")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_versions_follow_releases_and_upgrades, test_failed_and_interrupted_upgrades])
