// One PATCH of an existing resource with the Azure SDK for JavaScript: beginUpdateByIdAndWait of
// @azure/arm-resources, whose core-lro poller follows the operation to its end, as an ARM client upgrades
// a cluster or a node pool.
//
// Usage: node update.mjs ENDPOINT RESOURCE_ID BODY_JSON
// Environment: HCPRP_SUBSCRIPTION, HCPRP_TENANT, HCPRP_CLIENT_ID (the caller ARM names), HCPRP_API_VERSION
// (default 2026-10-01), HCPRP_TLS_CERT/KEY (the CA through NODE_EXTRA_CA_CERTS). Prints the resource the
// operation ended with as JSON, last.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ResourceManagementClient } from "@azure/arm-resources";

const [endpoint, resourceId, body] = process.argv.slice(2);
assert.ok(endpoint && resourceId && body, "usage: node update.mjs ENDPOINT RESOURCE_ID BODY_JSON");
const apiVersion = process.env.HCPRP_API_VERSION || "2026-10-01";
const credential = { getToken: async () => assert.fail("a bearer token was requested") };
const client = new ResourceManagementClient(credential, process.env.HCPRP_SUBSCRIPTION, {
  endpoint,
  tlsOptions: { cert: readFileSync(process.env.HCPRP_TLS_CERT, "utf8"), key: readFileSync(process.env.HCPRP_TLS_KEY, "utf8") },
});
client.pipeline.removePolicy({ name: "bearerTokenAuthenticationPolicy" });
client.pipeline.addPolicy({
  name: "armIdentityHeaders",
  sendRequest: async (request, next) => {
    const url = new URL(request.url);
    url.pathname = url.pathname.replace(/\/{2,}/g, "/");  // "{endpoint}/{resourceId}": ARM collapses "//"
    request.url = url.toString();
    request.headers.set("x-ms-home-tenant-id", process.env.HCPRP_TENANT);
    request.headers.set("x-ms-client-object-id", process.env.HCPRP_CLIENT_ID);
    return next(request);
  },
});
const done = await client.resources.beginUpdateByIdAndWait(resourceId, apiVersion, JSON.parse(body), {
  updateIntervalInMs: 200,
  abortSignal: AbortSignal.timeout(120_000),
});
console.log(JSON.stringify(done));
