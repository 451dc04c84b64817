// Runs oav's traffic validator (the library behind `oav validate-traffic`) over one folder of captures
// against one OpenAPI document and writes the outcome as JSON, for tests/oav/oav.py:
//   {"results": [per failing pair: specFilePath, payloadFilePath, errors, runtimeExceptions, operationInfo],
//    "undefined": [captures whose request matches no operation of the document]}
// The CLI only counts the latter; here they are named so that the caller can judge them.
// Usage: node validate-traffic.cjs <traffic dir> <openapi.json> <out.json>   (oav resolved from cwd)
"use strict";
const fs = require("fs");
const path = require("path");

const [trafficDir, specPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node validate-traffic.cjs <traffic dir> <openapi.json> <out.json>");
  process.exit(2);
}
const oavLib = path.join(process.cwd(), "node_modules", "oav", "dist", "lib");
const { TrafficValidator } = require(path.join(oavLib, "swaggerValidator", "trafficValidator"));

(async () => {
  const validator = new TrafficValidator(specPath, trafficDir);
  await validator.initialize();
  const results = await validator.validate();
  const undefinedOps = [];
  for (const file of validator.trafficFiles) {
    const payload = JSON.parse(fs.readFileSync(file, "utf8"));
    const { error } = validator.liveValidator.getOperationInfo(payload.liveRequest);
    if (error !== undefined) {
      undefinedOps.push(file);
    }
  }
  fs.writeFileSync(outPath, JSON.stringify({
    files: validator.trafficFiles.length,
    results,
    undefined: undefinedOps,
  }));
})().catch((e) => {
  console.error(`oav traffic validation failed: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
