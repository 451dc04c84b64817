#!/usr/bin/env python3
"""A subscription set to Deleted with 250 clusters ends with none: the frontend creates an implicit delete
for every resource, the backend drives them all, the Cluster Service is left empty."""

import concurrent.futures
import time

from e2e import (Arm, CsClient, expect, expect_eq, run_tests, wait_until)

CLUSTERS = 250


def test_subscription_deleted_with_250_clusters(ctx):
    endpoint, cs_url, _ = ctx.serve(profile="instant")
    cs = CsClient(cs_url)
    arm = Arm(endpoint)
    arm.register()
    # A second subscription whose cluster must survive the first one's deletion.
    bystander = Arm(endpoint)
    bystander.register()
    r = bystander.call("PUT", bystander.cluster_path("keep"), bystander.cluster_body("keep"))
    expect_eq(r.status, 201, f"bystander create ({r!r})")

    def create(i):
        name = f"c{i:03d}"
        res = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name), timeout=60)
        return name, res

    t0 = time.monotonic()
    status_urls = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for name, res in pool.map(create, range(CLUSTERS)):
            expect_eq(res.status, 201, f"create {name} ({res!r})")
            status_urls.append(res.header("Azure-AsyncOperation"))
    print(f"{CLUSTERS} cluster PUTs took {time.monotonic() - t0:.1f}s")

    # Wait for the creations to end so that the deletion starts from a settled subscription.
    def all_ready():
        body = cs.clusters(arm.subscription)
        return body["total"] == CLUSTERS and all(c["status"]["state"] == "ready" for c in body["items"])
    wait_until(all_ready, timeout=120, interval=0.5, what=f"{CLUSTERS} Cluster Service clusters ready")

    def all_succeeded():
        page = arm.call("GET", f"/subscriptions/{arm.subscription}/providers/Microsoft.RedHatOpenShift/"
                               "hcpOpenShiftClusters")
        items = []
        while True:
            expect_eq(page.status, 200, f"list ({page!r})")
            items += page.body.get("value", [])
            nxt = page.body.get("nextLink")
            if not nxt:
                break
            page = arm.call("GET", nxt)
        return len(items) == CLUSTERS and all(i["properties"]["provisioningState"] == "Succeeded" for i in items)
    wait_until(all_succeeded, timeout=120, interval=0.5, what="every cluster Succeeded")

    t0 = time.monotonic()
    r = arm.register("Deleted")
    expect_eq(r.status, 200, "subscription PUT Deleted")
    accepted = time.monotonic() - t0
    # ARM sends nothing but subscription updates to a deleted subscription; the frontend refuses others.
    refused = arm.call("GET", arm.cluster_path("c000"))
    expect_eq(refused.status, 400, f"GET in a Deleted subscription ({refused!r})")

    wait_until(lambda: cs.clusters(arm.subscription)["total"] == 0, timeout=240, interval=0.5,
               what="the Cluster Service to have no cluster of the subscription")
    gone_in_cs = time.monotonic() - t0

    def no_documents():
        return ctx.check()["resources"] == 1  # the bystander's cluster only
    wait_until(no_documents, timeout=60, interval=1, what="every resource document of the subscription removed")
    done = time.monotonic() - t0
    print(f"subscription Deleted with {CLUSTERS} clusters: PUT answered in {accepted:.2f}s, Cluster Service empty "
          f"after {gone_in_cs:.1f}s, documents gone after {done:.1f}s")

    # Registered again (ARM re-registers a restored subscription), it lists nothing.
    arm.register("Registered")
    lst = arm.call("GET", f"/subscriptions/{arm.subscription}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
    expect_eq(lst.status, 200, f"list after re-registration ({lst!r})")
    expect_eq(lst.body.get("value"), [], "clusters listed after the deletion")
    expect(not lst.body.get("nextLink"), "an empty list with a nextLink")
    # The other subscription's cluster is untouched.
    keep = bystander.call("GET", bystander.cluster_path("keep"))
    expect_eq(keep.status, 200, "bystander cluster GET")
    expect_eq(keep.body["properties"]["provisioningState"], "Succeeded", "bystander cluster state")
    expect_eq(cs.clusters(bystander.subscription)["total"], 1, "bystander Cluster Service cluster")
    ctx.check()


if __name__ == "__main__":
    run_tests([test_subscription_deleted_with_250_clusters])
