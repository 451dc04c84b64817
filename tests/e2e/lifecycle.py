#!/usr/bin/env python3
"""A cluster's life through the ARM asynchronous operation contract, against `hcprp serve`:
create (201, Azure-AsyncOperation, Accepted -> Provisioning -> Succeeded), the result endpoint's 202s,
PATCH (Updating -> Succeeded), requestAdminCredential's result, the async notification."""

import json
import time

from e2e import (Arm, CsClient, credential_request_body, expect, expect_eq, run_tests, wait_until)

# The demo profile at this scale: steps of ~0.4 s, installs of ~2 s; every state stays visible for
# long enough that a 50 ms poll of the status endpoint sees it.
SCALE = "0.4"


def create_cluster(arm, name, headers=None):
    r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name), headers=headers)
    expect_eq(r.status, 201, f"create {name} ({r!r}) status code")
    return r


def test_create_through_status_endpoint(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale=SCALE)
    arm = Arm(endpoint)
    arm.register()
    r = create_cluster(arm, "c1")
    expect_eq(r.body["properties"]["provisioningState"], "Accepted", "provisioningState in the 201 body")
    status_url = r.header("Azure-AsyncOperation")
    expect(status_url, "201 without Azure-AsyncOperation")
    expect("/hcpOperationStatuses/" in status_url, f"unexpected Azure-AsyncOperation {status_url}")
    expect(f"/subscriptions/{arm.subscription}/" in status_url, "status URL outside the subscription")
    expect("api-version=" in status_url, "status URL without api-version")
    expect(r.header("x-ms-request-id"), "201 without x-ms-request-id")

    # The result endpoint (Location) answers 202 with Location and Retry-After until the end.
    op_id = status_url.split("/hcpOperationStatuses/")[1].split("?")[0]
    result_url = status_url.replace("/hcpOperationStatuses/", "/hcpOperationResults/")
    early = arm.call("GET", result_url)
    expect_eq(early.status, 202, f"result endpoint before the end ({early!r})")
    expect(early.header("Location") and "/hcpOperationResults/" in early.header("Location"),
           f"202 Location header: {early.headers}")
    expect_eq(early.header("Retry-After"), "1", "Retry-After on 202")

    # The resource's provisioningState follows the operation's status.
    resource_states = []

    def on_status(status, res):
        expect_eq(res.body.get("name"), op_id, "operation status name")
        expect(res.body.get("startTime"), "operation status without startTime")
        g = arm.call("GET", arm.cluster_path("c1"))
        resource_states.append(g.body["properties"]["provisioningState"])

    seen, final = arm.poll_operation(status_url, timeout=60, on_status=on_status)
    expect_eq(seen, ["Accepted", "Provisioning", "Succeeded"], "statuses seen on the status endpoint")
    expect(final.get("endTime"), "terminal status without endTime")
    expect("error" not in final, f"Succeeded with an error: {final}")
    expect_eq(resource_states[-1], "Succeeded", "resource provisioningState at the end")

    done = arm.call("GET", result_url)
    expect_eq(done.status, 200, f"result endpoint after Succeeded ({done!r})")
    expect_eq(done.body["properties"]["provisioningState"], "Succeeded", "result body provisioningState")

    # The same status is not visible to another caller (tenant / client object ID).
    other = Arm(endpoint, subscription=arm.subscription, tenant=arm.tenant)
    expect_eq(other.call("GET", status_url).status, 404, "status endpoint for another client object ID")

    # The Cluster Service has the cluster, ready.
    items = CsClient(cs_url).clusters(arm.subscription)["items"]
    expect_eq(len(items), 1, "Cluster Service clusters")
    expect_eq(items[0]["status"]["state"], "ready", "Cluster Service state")
    ctx.check()


def test_patch_updating(ctx):
    # Full demo timing of the timed provisioner: the update stays in Updating for about 3 s, longer than the
    # 1 s Retry-After the poller honours, so the state cannot slip between two polls. (The provisioning
    # engine has nothing to do in Azure for this change and finishes it at once; a version change ends once
    # the upgrade is accepted, tests/e2e/upgrades.py.)
    endpoint, _, _ = ctx.serve(profile="demo", time_scale=1.0, extra=("--provisioner", "timed"))
    arm = Arm(endpoint)
    arm.register()
    r = create_cluster(arm, "p1")
    arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)

    patch = {"properties": {"nodeDrainTimeoutMinutes": 30}, "tags": {"stage": "2"}}
    r = arm.call("PATCH", arm.cluster_path("p1"), patch)
    expect_eq(r.status, 202, f"PATCH ({r!r}) status code")
    expect(r.header("Azure-AsyncOperation"), "PATCH 202 without Azure-AsyncOperation")
    expect(r.header("Location"), "PATCH 202 without Location")
    expect_eq(r.header("Retry-After"), "1", "PATCH Retry-After")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"PATCH operation end (seen {seen})")
    expect("Updating" in seen, f"Updating never observed on the status endpoint: {seen}")
    expect_eq(seen[seen.index("Updating"):], ["Updating", "Succeeded"], "statuses after Updating")
    g = arm.call("GET", arm.cluster_path("p1"))
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "provisioningState after PATCH")
    expect_eq(g.body.get("tags", {}).get("stage"), "2", "tag set by PATCH")
    ctx.check()


def test_request_credential_result(ctx):
    endpoint, _, _ = ctx.serve(profile="demo", time_scale=SCALE)
    arm = Arm(endpoint)
    arm.register()
    r = create_cluster(arm, "k1")
    arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)

    r = arm.call("POST", arm.cluster_path("k1") + "/requestAdminCredential", credential_request_body())
    expect_eq(r.status, 202, f"requestAdminCredential ({r!r}) status code")
    location = r.header("Location")
    expect(location and "/hcpOperationResults/" in location, f"requestAdminCredential Location: {r.headers}")
    expect(r.header("Azure-AsyncOperation"), "requestAdminCredential without Azure-AsyncOperation")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"credential operation (seen {seen})")

    res = arm.call("GET", location)
    expect_eq(res.status, 200, f"hcpOperationResults ({res!r})")
    kubeconfig = res.body.get("kubeconfig")
    expect(isinstance(kubeconfig, str) and "apiVersion" in kubeconfig and "clusters" in kubeconfig,
           f"kubeconfig: {kubeconfig!r}")
    exp = res.body.get("expirationTimestamp")
    expect(isinstance(exp, str) and exp[:4].isdigit() and "T" in exp, f"expirationTimestamp: {exp!r}")
    expect(exp > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), f"expirationTimestamp in the past: {exp}")
    # The cluster's state is untouched by a credential request.
    g = arm.call("GET", arm.cluster_path("k1"))
    expect_eq(g.body["properties"]["provisioningState"], "Succeeded", "cluster state after the credential")
    ctx.check()


def test_async_notification(ctx):
    endpoint, _, _ = ctx.serve(profile="demo", time_scale=SCALE)
    listener = ctx.listener()
    arm = Arm(endpoint)
    arm.register()
    uri = f"http://127.0.0.1:{listener.port}/notify"
    r = create_cluster(arm, "n1", headers={"Azure-AsyncNotificationUri": uri})
    status_url = r.header("Azure-AsyncOperation")
    op_id = status_url.split("/hcpOperationStatuses/")[1].split("?")[0]
    seen, final = arm.poll_operation(status_url, timeout=60)
    expect_eq(seen[-1], "Succeeded", "operation end")

    got = listener.wait(lambda item: item["path"] == "/notify", timeout=30)
    body = json.loads(got["raw"])
    expect_eq(body.get("status"), "Succeeded", f"notified status ({body})")
    expect(op_id in json.dumps(body), f"notification does not name the operation {op_id}: {body}")
    # Only terminal statuses are notified, once.
    time.sleep(1)
    expect_eq(len(listener.received), 1, f"notifications received: {listener.received}")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_create_through_status_endpoint, test_patch_updating, test_request_credential_result,
               test_async_notification])
