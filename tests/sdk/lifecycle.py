#!/usr/bin/python3
"""Drives a cluster, a node pool and an external auth through create, update and delete, and the
credential requests, with the Azure SDK for Python (Debian's python3-azure) against an hcprp frontend.

The generic *_by_id operations of azure.mgmt.resource.ResourceManagementClient send the bodies of
bodies.json; their ARMPolling follows each long-running operation by its own rules. The POST actions
(requestAdminCredential, revokeCredentials) go through the same kind of pipeline and are followed by an
LROPoller with ARMPolling, as an ARM client does. The frontend speaks plain HTTP and takes ARM's identity
headers instead of a bearer token, so the client's authentication policy is one that adds those headers.

Usage: /usr/bin/python3 lifecycle.py http://127.0.0.1:PORT
Environment: HCPRP_API_VERSION (default 2026-10-01); HCPRP_CREDENTIAL_REQUEST, the requestAdminCredential
body as JSON (the harness makes one with a fresh CSR; unset or "null": no body).
Prints "sdk python lifecycle: 1 passed, 0 failed" last on success.
"""

import email.utils
import json
import os
import sys
import uuid

from azure.core.exceptions import ResourceNotFoundError
from azure.core.pipeline.transport import RequestsTransport
from azure.core.pipeline.policies import (HeadersPolicy, NetworkTraceLoggingPolicy, RedirectPolicy,
                                          RequestIdPolicy, RetryPolicy, SansIOHTTPPolicy, UserAgentPolicy)
from azure.core.polling import LROPoller
from azure.core.rest import HttpRequest
from azure.mgmt.core import ARMPipelineClient
from azure.mgmt.core.polling.arm_polling import ARMPolling
from azure.mgmt.resource import ResourceManagementClient

HERE = os.path.dirname(os.path.abspath(__file__))


class ArmIdentityHeaders(SansIOHTTPPolicy):
    """Takes the authentication policy's place: the identity headers ARM adds when it forwards a call."""

    def __init__(self, tenant_id, client_object_id):
        self.tenant_id = tenant_id
        self.client_object_id = client_object_id

    def on_request(self, request):
        request.http_request.headers["x-ms-home-tenant-id"] = self.tenant_id
        request.http_request.headers["x-ms-client-object-id"] = self.client_object_id


class NoToken:
    """The credential the client requires; with ArmIdentityHeaders in place no token is ever asked for."""

    def get_token(self, *scopes, **kwargs):
        raise AssertionError(f"a bearer token was requested for {scopes}")


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def expect_eq(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def load_bodies(subscription_id, resource_group):
    with open(os.path.join(HERE, "bodies.json")) as f:
        text = f.read()
    text = text.replace("{subscriptionId}", subscription_id).replace("{resourceGroup}", resource_group)
    return json.loads(text)


def raw_json(pipeline_response, deserialized, headers):
    """`cls` of the SDK operations: the response body as sent, not the SDK's GenericResource model."""
    return json.loads(pipeline_response.http_response.text())


def finish(poller, what, timeout=120):
    """The poller's result; fails when the operation is not over within `timeout` seconds."""
    result = poller.result(timeout)
    expect(poller.done(), f"{what}: the operation is still {poller.status()} after {timeout}s")
    return result


def main():
    endpoint = sys.argv[1].rstrip("/")
    api_version = os.environ.get("HCPRP_API_VERSION", "2026-10-01")
    subscription_id = str(uuid.uuid4())
    tenant_id = str(uuid.uuid4())
    resource_group = "sdk-python-rg"
    name = "sdk-python-cluster"
    cluster_id = (f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
                  f"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}")
    pool_id = f"{cluster_id}/nodePools/pool1"
    # A cluster keeps a node pool (its last one cannot be deleted): a second pool lets pool1 be deleted.
    spare_pool_id = f"{cluster_id}/nodePools/pool2"
    auth_id = f"{cluster_id}/externalAuths/auth1"
    bodies = load_bodies(subscription_id, resource_group)

    identity = ArmIdentityHeaders(tenant_id, str(uuid.uuid4()))

    def transport():
        """HTTPS as ARM calls a resource provider: the provider's CA, ARM's client certificate."""
        if not os.environ.get("HCPRP_TLS_CERT"):
            return RequestsTransport()
        return RequestsTransport(connection_verify=os.environ["HCPRP_TLS_CA"],
                                 connection_cert=(os.environ["HCPRP_TLS_CERT"], os.environ["HCPRP_TLS_KEY"]))

    client = ResourceManagementClient(NoToken(), subscription_id, base_url=endpoint,
                                      authentication_policy=identity, transport=transport())
    # The policies of an ARM client's pipeline, for the calls the resource client has no operation for.
    pipeline = ARMPipelineClient(endpoint, policies=[
        RequestIdPolicy(), HeadersPolicy(), UserAgentPolicy(sdk_moniker="hcprp-sdk-test"), identity, RetryPolicy(),
        RedirectPolicy(), NetworkTraceLoggingPolicy()], transport=transport())
    poll = {"polling_interval": 0.2, "cls": raw_json}

    def call(method, path, version, body=None):
        return pipeline.send_request(HttpRequest(method, f"{endpoint}{path}", params={"api-version": version},
                                                 json=body))

    def action(path, body=None):
        """POST an ARM action and follow its long-running operation with ARMPolling; returns the final body."""
        request = HttpRequest("POST", f"{endpoint}{path}", params={"api-version": api_version}, json=body)
        initial = pipeline.send_request(request, _return_pipeline_response=True)
        status = initial.http_response.status_code
        expect(status in (200, 202), f"POST {path}: HTTP {status} {initial.http_response.text()}")

        def final(pipeline_response):
            text = pipeline_response.http_response.text()
            return json.loads(text) if text else None
        polling = ARMPolling(0.2, lro_options={"final-state-via": "location"})
        return finish(LROPoller(pipeline, initial, final, polling), f"POST {path}")

    def create(resource_id, body):
        data = json.dumps(body).encode()
        return finish(client.resources.begin_create_or_update_by_id(resource_id, api_version, data, **poll),
                      f"PUT {resource_id}")

    def update(resource_id, body):
        data = json.dumps(body).encode()
        return finish(client.resources.begin_update_by_id(resource_id, api_version, data, **poll),
                      f"PATCH {resource_id}")

    def get(resource_id):
        return client.resources.get_by_id(resource_id, api_version, cls=raw_json)

    def delete(resource_id):
        finish(client.resources.begin_delete_by_id(resource_id, api_version, polling_interval=0.2),
               f"DELETE {resource_id}")
        try:
            get(resource_id)
        except ResourceNotFoundError:
            return
        raise AssertionError(f"{resource_id} still there after its delete")

    r = call("PUT", f"/subscriptions/{subscription_id}", "2.0",
             {"state": "Registered", "registrationDate": email.utils.formatdate(usegmt=True),
              "properties": {"tenantId": tenant_id, "registeredFeatures": []}})
    expect(r.status_code in (200, 201), f"subscription PUT: HTTP {r.status_code} {r.text()}")

    cluster = create(cluster_id, bodies["cluster"])
    expect_eq(cluster["properties"]["provisioningState"], "Succeeded", "cluster provisioningState")
    expect_eq(cluster["id"].lower(), cluster_id.lower(), "cluster id")
    expect_eq(sorted(cluster["identity"]["userAssignedIdentities"]),
              sorted(bodies["cluster"]["identity"]["userAssignedIdentities"]), "assigned identities")
    dp = cluster["properties"]["platform"]["operatorsAuthentication"]["userAssignedIdentities"]["dataPlaneOperators"]
    expect_eq(dp, bodies["cluster"]["properties"]["platform"]["operatorsAuthentication"]["userAssignedIdentities"]
              ["dataPlaneOperators"], "data-plane operator identities")
    got = get(cluster_id)
    expect_eq(got["name"], name, "cluster name")
    expect_eq(got["properties"]["provisioningState"], "Succeeded", "cluster provisioningState on GET")

    updated = update(cluster_id, bodies["clusterUpdate"])
    expect_eq(updated["tags"].get("stage"), "updated", "cluster tags after the update")
    expect_eq(updated["properties"]["nodeDrainTimeoutMinutes"], 30, "cluster nodeDrainTimeoutMinutes")

    pool = create(pool_id, bodies["nodePool"])
    expect_eq(pool["properties"]["provisioningState"], "Succeeded", "node pool provisioningState")
    expect_eq(pool["properties"]["replicas"], 2, "node pool replicas")
    pool = update(pool_id, bodies["nodePoolUpdate"])
    expect_eq(pool["properties"]["replicas"], 3, "node pool replicas after the update")
    expect_eq(get(pool_id)["tags"].get("stage"), "updated", "node pool tags after the update")
    spare = create(spare_pool_id, bodies["nodePool"])
    expect_eq(spare["properties"]["provisioningState"], "Succeeded", "second node pool provisioningState")

    auth = create(auth_id, bodies["externalAuth"])
    expect_eq(auth["properties"]["provisioningState"], "Succeeded", "external auth provisioningState")
    auth = update(auth_id, bodies["externalAuthUpdate"])
    expect_eq(auth["properties"]["issuer"]["audiences"], ["sdk-console-client", "sdk-cli-client"],
              "external auth audiences after the update")

    credential_body = json.loads(os.environ.get("HCPRP_CREDENTIAL_REQUEST") or "null")
    credential = action(f"{cluster_id}/requestAdminCredential", credential_body)
    expect(credential and credential.get("kubeconfig"), f"requestAdminCredential result: {credential!r}")
    expect(credential.get("expirationTimestamp"), f"requestAdminCredential result: {credential!r}")
    action(f"{cluster_id}/revokeCredentials")

    delete(auth_id)
    delete(pool_id)
    delete(cluster_id)
    print("sdk python lifecycle: 1 passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
