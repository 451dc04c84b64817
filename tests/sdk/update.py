#!/usr/bin/python3
"""One PATCH of an existing resource with the Azure SDK for Python: begin_update_by_id of
azure.mgmt.resource's ResourceManagementClient, followed by its ARMPolling to the end of the operation, as
an ARM client upgrades a cluster or a node pool.

Usage: /usr/bin/python3 update.py ENDPOINT RESOURCE_ID BODY_JSON
Environment: HCPRP_SUBSCRIPTION, HCPRP_TENANT, HCPRP_CLIENT_ID (the caller ARM names), HCPRP_API_VERSION
(default 2026-10-01), HCPRP_TLS_CA/CERT/KEY. Prints the resource the operation ended with as JSON, last.
"""

import json
import os
import sys

from azure.core.pipeline.transport import RequestsTransport
from azure.mgmt.resource import ResourceManagementClient

from lifecycle import ArmIdentityHeaders, NoToken, finish, raw_json


def main():
    endpoint, resource_id, body = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    api_version = os.environ.get("HCPRP_API_VERSION", "2026-10-01")
    identity = ArmIdentityHeaders(os.environ["HCPRP_TENANT"], os.environ["HCPRP_CLIENT_ID"])
    transport = RequestsTransport(connection_verify=os.environ["HCPRP_TLS_CA"],
                                  connection_cert=(os.environ["HCPRP_TLS_CERT"], os.environ["HCPRP_TLS_KEY"]))
    client = ResourceManagementClient(NoToken(), os.environ["HCPRP_SUBSCRIPTION"], base_url=endpoint,
                                      authentication_policy=identity, transport=transport)
    poller = client.resources.begin_update_by_id(resource_id, api_version, body.encode(), polling_interval=0.2,
                                                 cls=raw_json)
    print(json.dumps(finish(poller, f"PATCH {resource_id}")), flush=True)


if __name__ == "__main__":
    main()
