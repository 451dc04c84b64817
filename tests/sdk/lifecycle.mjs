// Drives a cluster, a node pool and an external auth through create, update and delete, and the
// credential requests, with the Azure SDK for JavaScript against an hcprp frontend: the generic *ById
// methods of @azure/arm-resources with their core-lro pollers send the bodies of bodies.json (shaped like
// the specification's examples); the POST actions go through the client's pipeline and a core-lro
// poller, as an ARM client follows them.
// Usage: node lifecycle.mjs http://127.0.0.1:PORT
// Environment: HCPRP_API_VERSION (default 2026-10-01); HCPRP_CREDENTIAL_REQUEST, the requestAdminCredential
// body as JSON (the harness makes one with a fresh CSR; unset or "null": no body).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ResourceManagementClient } from "@azure/arm-resources";
import { createHttpPoller } from "@azure/core-lro";
import { createHttpHeaders, createPipelineRequest } from "@azure/core-rest-pipeline";

const endpoint = process.argv[2];
assert.ok(endpoint, "usage: node lifecycle.mjs <endpoint>");
const subscriptionId = randomUUID();
const tenantId = randomUUID();
const clientObjectId = randomUUID();
const apiVersion = process.env.HCPRP_API_VERSION || "2026-10-01";
const credentialRequest = JSON.parse(process.env.HCPRP_CREDENTIAL_REQUEST || "null");
const rg = "sdk-rg";
const name = "sdk-cluster";
const base = `/subscriptions/${subscriptionId}/resourceGroups/${rg}/providers/Microsoft.RedHatOpenShift`;
const clusterId = `${base}/hcpOpenShiftClusters/${name}`;
const poolId = `${clusterId}/nodePools/pool1`;
// A cluster keeps a node pool (its last one cannot be deleted): a second pool lets pool1 be deleted.
const sparePoolId = `${clusterId}/nodePools/pool2`;
const authId = `${clusterId}/externalAuths/auth1`;

const bodies = JSON.parse(
  readFileSync(new URL("./bodies.json", import.meta.url), "utf8")
    .replaceAll("{subscriptionId}", subscriptionId)
    .replaceAll("{resourceGroup}", rg),
);

// The frontend authenticates ARM by its client certificate (HCPRP_TLS_CERT/KEY; the frontend's CA comes
// through NODE_EXTRA_CA_CERTS): no bearer tokens; ARM's identity headers instead.
const credential = { getToken: async () => assert.fail("a bearer token was requested") };
const tlsOptions = process.env.HCPRP_TLS_CERT
  ? { cert: readFileSync(process.env.HCPRP_TLS_CERT, "utf8"), key: readFileSync(process.env.HCPRP_TLS_KEY, "utf8") }
  : undefined;
const client = new ResourceManagementClient(credential, subscriptionId, {
  endpoint,
  tlsOptions,
  allowInsecureConnection: endpoint.startsWith("http:"),
});
client.pipeline.removePolicy({ name: "bearerTokenAuthenticationPolicy" });
client.pipeline.addPolicy({
  name: "armIdentityHeaders",
  sendRequest: async (request, next) => {
    // The generic *ById methods build "{endpoint}/{resourceId}", and resource IDs start with "/": ARM
    // collapses the doubled slash before it forwards a request to a resource provider, so do it here.
    const url = new URL(request.url);
    url.pathname = url.pathname.replace(/\/{2,}/g, "/");
    request.url = url.toString();
    request.headers.set("x-ms-home-tenant-id", tenantId);
    request.headers.set("x-ms-client-object-id", clientObjectId);
    request.allowInsecureConnection = url.protocol === "http:";
    return next(request);
  },
});

// Each long-running operation gets two minutes (seconds are enough with the simulator's demo profile).
const OPERATION_TIMEOUT_MS = 120_000;
const poll = () => ({ updateIntervalInMs: 200, abortSignal: AbortSignal.timeout(OPERATION_TIMEOUT_MS) });

// One request through the client's pipeline (identity headers, retries), for calls without an SDK method.
async function send(method, url, body) {
  const request = createPipelineRequest({
    url,
    method,
    body: body == null ? undefined : JSON.stringify(body),
    headers: createHttpHeaders(body == null ? {} : { "content-type": "application/json" }),
    allowInsecureConnection: url.startsWith("http:"),
  });
  const res = await client.sendRequest(request);
  const parsed = res.bodyAsText ? JSON.parse(res.bodyAsText) : undefined;
  return { flatResponse: parsed, rawResponse: { statusCode: res.status, headers: res.headers.toJSON(), body: parsed } };
}

// POST an ARM action and follow its long-running operation to the result at its Location.
async function action(path, body) {
  const url = `${endpoint}${path}?api-version=${apiVersion}`;
  const poller = await createHttpPoller(
    {
      requestMethod: "POST",
      requestPath: url,
      sendInitialRequest: async () => {
        const res = await send("POST", url, body);
        const status = res.rawResponse.statusCode;
        assert.ok(status === 200 || status === 202, `POST ${path}: HTTP ${status} ${JSON.stringify(res.flatResponse)}`);
        return res;
      },
      sendPollRequest: (pollUrl) => send("GET", pollUrl),
    },
    { intervalInMs: 200, resourceLocationConfig: "location" },
  );
  return poller.pollUntilDone({ abortSignal: AbortSignal.timeout(OPERATION_TIMEOUT_MS) });
}

const register = await send("PUT", `${endpoint}/subscriptions/${subscriptionId}?api-version=2.0`, {
  state: "Registered",
  registrationDate: new Date().toUTCString(),
  properties: { tenantId, registeredFeatures: [] },
});
assert.ok([200, 201].includes(register.rawResponse.statusCode),
          `subscription PUT answered ${register.rawResponse.statusCode}`);

const r = client.resources;
const created = await r.beginCreateOrUpdateByIdAndWait(clusterId, apiVersion, bodies.cluster, poll());
assert.equal(created.properties.provisioningState, "Succeeded");
assert.equal(created.id.toLowerCase(), clusterId.toLowerCase());
assert.equal(created.tags.owner, "sdk");
assert.deepEqual(Object.keys(created.identity.userAssignedIdentities).sort(),
                 Object.keys(bodies.cluster.identity.userAssignedIdentities).sort());
const wantDp = bodies.cluster.properties.platform.operatorsAuthentication.userAssignedIdentities.dataPlaneOperators;
assert.deepEqual(created.properties.platform.operatorsAuthentication.userAssignedIdentities.dataPlaneOperators, wantDp);

const got = await r.getById(clusterId, apiVersion);
assert.equal(got.properties.provisioningState, "Succeeded");
assert.equal(got.name, name);

const updated = await r.beginUpdateByIdAndWait(clusterId, apiVersion, bodies.clusterUpdate, poll());
assert.equal(updated.tags.stage, "updated");
assert.equal(updated.properties.nodeDrainTimeoutMinutes, 30);

const pool = await r.beginCreateOrUpdateByIdAndWait(poolId, apiVersion, bodies.nodePool, poll());
assert.equal(pool.properties.provisioningState, "Succeeded");
assert.equal(pool.properties.replicas, 2);
const pool2 = await r.beginUpdateByIdAndWait(poolId, apiVersion, bodies.nodePoolUpdate, poll());
assert.equal(pool2.properties.replicas, 3);
assert.equal((await r.getById(poolId, apiVersion)).tags.stage, "updated");
const spare = await r.beginCreateOrUpdateByIdAndWait(sparePoolId, apiVersion, bodies.nodePool, poll());
assert.equal(spare.properties.provisioningState, "Succeeded");

const auth = await r.beginCreateOrUpdateByIdAndWait(authId, apiVersion, bodies.externalAuth, poll());
assert.equal(auth.properties.provisioningState, "Succeeded");
const auth2 = await r.beginUpdateByIdAndWait(authId, apiVersion, bodies.externalAuthUpdate, poll());
assert.deepEqual(auth2.properties.issuer.audiences, ["sdk-console-client", "sdk-cli-client"]);

const admin = await action(`${clusterId}/requestAdminCredential`, credentialRequest);
assert.ok(admin && typeof admin.kubeconfig === "string" && admin.kubeconfig.includes("clusters"),
          `requestAdminCredential result: ${JSON.stringify(admin)}`);
assert.ok(admin.expirationTimestamp, `requestAdminCredential result: ${JSON.stringify(admin)}`);
await action(`${clusterId}/revokeCredentials`, null);

for (const id of [authId, poolId, clusterId]) {
  await r.beginDeleteByIdAndWait(id, apiVersion, poll());
  await assert.rejects(r.getById(id, apiVersion), (e) => e.statusCode === 404);
}
console.log("sdk lifecycle: 1 passed, 0 failed");
