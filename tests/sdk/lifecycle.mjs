// Runs a cluster's whole lifecycle through the Azure SDK's long-running-operation pollers against an
// hcprp frontend. Usage: node lifecycle.mjs http://127.0.0.1:PORT
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ResourceManagementClient } from "@azure/arm-resources";

const endpoint = process.argv[2];
assert.ok(endpoint, "usage: node lifecycle.mjs <endpoint>");
const subscriptionId = randomUUID();
const tenantId = randomUUID();
const clientObjectId = randomUUID();
const apiVersion = process.env.HCPRP_API_VERSION || "2026-10-01";
const rg = "sdk-rg";
const name = "sdk-cluster";
const base = `/subscriptions/${subscriptionId}/resourceGroups/${rg}/providers/Microsoft.RedHatOpenShift`;
const clusterId = `${base}/hcpOpenShiftClusters/${name}`;

// The frontend speaks plain HTTP in tests: no bearer tokens; ARM's identity headers instead.
const credential = { getToken: async () => ({ token: "unused", expiresOnTimestamp: Date.now() + 3600e3 }) };
const client = new ResourceManagementClient(credential, subscriptionId, {
  endpoint,
  allowInsecureConnection: true,
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
    request.allowInsecureConnection = true;
    return next(request);
  },
});

const poll = { updateIntervalInMs: 200 };

async function registerSubscription() {
  const res = await fetch(`${endpoint}/subscriptions/${subscriptionId}?api-version=2.0`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      state: "Registered",
      registrationDate: new Date().toUTCString(),
      properties: { tenantId, registeredFeatures: [] },
    }),
  });
  assert.ok(res.status === 200 || res.status === 201, `subscription PUT answered ${res.status}`);
}

function clusterBody() {
  const sub = `/subscriptions/${subscriptionId}/resourceGroups/${rg}`;
  const vnet = `${sub}/providers/Microsoft.Network/virtualNetworks/vnet`;
  const mi = (n) => `${sub}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${n}`;
  const uai = {};
  for (const n of ["cp-cluster-api-azure", "cp-control-plane", "cp-cloud-controller-manager", "cp-ingress",
                   "cp-disk-csi-driver", "cp-file-csi-driver", "cp-image-registry", "cp-cloud-network-config",
                   "service"]) {
    uai[mi(n)] = {};
  }
  return {
    location: "eastus",
    tags: { owner: "sdk" },
    identity: { type: "UserAssigned", userAssignedIdentities: uai },
    properties: {
      version: { id: "4.20", channelGroup: "stable" },
      network: { podCidr: "10.128.0.0/14", serviceCidr: "172.30.0.0/16", machineCidr: "10.0.0.0/16", hostPrefix: 23 },
      api: { visibility: "Public" },
      platform: {
        subnetId: `${vnet}/subnets/workers`,
        vnetIntegrationSubnetId: `${vnet}/subnets/integration`,
        networkSecurityGroupId: `${sub}/providers/Microsoft.Network/networkSecurityGroups/nsg`,
        operatorsAuthentication: {
          userAssignedIdentities: {
            controlPlaneOperators: {
              "cluster-api-azure": mi("cp-cluster-api-azure"),
              "control-plane": mi("cp-control-plane"),
              "cloud-controller-manager": mi("cp-cloud-controller-manager"),
              ingress: mi("cp-ingress"),
              "disk-csi-driver": mi("cp-disk-csi-driver"),
              "file-csi-driver": mi("cp-file-csi-driver"),
              "image-registry": mi("cp-image-registry"),
              "cloud-network-config": mi("cp-cloud-network-config"),
            },
            dataPlaneOperators: {},
            serviceManagedIdentity: mi("service"),
          },
        },
      },
    },
  };
}

await registerSubscription();

const created = await client.resources.beginCreateOrUpdateByIdAndWait(clusterId, apiVersion, clusterBody(), poll);
assert.equal(created.properties.provisioningState, "Succeeded");
assert.equal(created.id.toLowerCase(), clusterId.toLowerCase());
assert.equal(created.tags.owner, "sdk");

const got = await client.resources.getById(clusterId, apiVersion);
assert.equal(got.properties.provisioningState, "Succeeded");
assert.equal(got.name, name);

const updated = await client.resources.beginUpdateByIdAndWait(clusterId, apiVersion, { tags: { owner: "sdk", stage: "2" } }, poll);
assert.equal(updated.tags.stage, "2");

const poolId = `${clusterId}/nodePools/pool1`;
const pool = await client.resources.beginCreateOrUpdateByIdAndWait(poolId, apiVersion, {
  location: "eastus",
  properties: {
    version: { id: "4.20.8", channelGroup: "stable" },
    platform: { vmSize: "Standard_D8s_v3", subnetId: clusterBody().properties.platform.subnetId },
    replicas: 2,
  },
}, poll);
assert.equal(pool.properties.provisioningState, "Succeeded");

await client.resources.beginDeleteByIdAndWait(poolId, apiVersion, poll);
await client.resources.beginDeleteByIdAndWait(clusterId, apiVersion, poll);

await assert.rejects(client.resources.getById(clusterId, apiVersion), (e) => e.statusCode === 404);
console.log("sdk lifecycle: 1 passed, 0 failed");
