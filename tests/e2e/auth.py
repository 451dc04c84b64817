#!/usr/bin/env python3
"""Who may call, against `hcprp serve` with its generated TLS files: only a caller presenting ARM's client
certificate reaches the ARM API (the attacks that used to work without one are refused and change nothing),
health probes stay open, plaintext on the TLS port is refused, the Cluster Service needs the resource
provider's certificate and its /control API its token, and --insecure-http listens on loopback only."""

import json
import os
import socket
import ssl
import subprocess
import urllib.request

from e2e import ARGS, Arm, credential_request_body, expect, expect_eq, http_request, run_tests
import e2e


def direct(ctx):
    """hcprp serve without the capturing proxy: (ARM URL, Cluster Service URL, control URL, proc)."""
    data = ctx.path("serve")
    p = ctx.spawn("serve", [e2e.ARGS.hcprp, "serve", "--data-dir", data, "--listen", "127.0.0.1:0",
                            "--retry-after", "1", "--profile", "instant", "--tls-dir", ctx.tls.dir])
    arm = p.wait_line(e2e.url_after("ARM endpoint:"))
    cs = p.wait_line(e2e.url_after("Cluster Service:"))
    control = p.wait_line(e2e.url_after("simulator control:"))
    return arm, cs, control, p


def no_cert_context(ctx):
    return ssl.create_default_context(cafile=ctx.tls.ca)


def test_only_arm_reaches_the_api(ctx):
    arm_url, _, _, proc = direct(ctx)
    victim = Arm(arm_url)
    victim.register()
    r = victim.call("PUT", victim.cluster_path("c1"), victim.cluster_body("c1"))
    expect(r.status in (200, 201), f"cluster PUT as ARM: {r!r}")
    anonymous = no_cert_context(ctx)
    # The attacks: delete another subscription's clusters, rewrite its tenant, fetch an admin credential.
    attacks = [
        ("PUT", f"/subscriptions/{victim.subscription}?api-version=2.0",
         {"state": "Deleted", "properties": {"tenantId": victim.tenant}}),
        ("PUT", f"/subscriptions/{victim.subscription}?api-version=2.0",
         {"state": "Registered", "properties": {"tenantId": "00000000-0000-0000-0000-00000000bad0"}}),
        ("POST", f"{victim.cluster_path('c1')}/requestAdminCredential?api-version={e2e.API_VERSION}",
         credential_request_body()),
        ("GET", f"{victim.cluster_path('c1')}?api-version={e2e.API_VERSION}", None),
    ]
    other_ca = make_foreign_client_cert(ctx)
    for context, reason in ((anonymous, "no_certificate"), (other_ca, "unknown_certificate")):
        for method, path, body in attacks:
            r = http_request(method, arm_url + path, body, victim.headers(), context=context)
            expect_eq(r.status, 401, f"{method} {path} with {reason}")
            expect_eq(r.body["error"]["code"], "AuthenticationFailed", "error code")
            expect(reason in r.body["error"]["message"], f"reason in message: {r.body}")
    # Nothing changed.
    sub = victim.call("GET", f"/subscriptions/{victim.subscription}", api_version="2.0")
    expect_eq(sub.status, 200, "subscription GET as ARM")
    expect_eq(sub.body["state"], "Registered", "subscription state")
    expect_eq(sub.body["properties"]["tenantId"], victim.tenant, "tenant")
    expect_eq(victim.call("GET", victim.cluster_path("c1")).status, 200, "cluster still there")
    # Health probes need no certificate.
    expect_eq(http_request("GET", arm_url + "/healthz", context=anonymous).status, 200, "/healthz")
    # Every refusal is logged with its reason.
    log = open(proc.log_path).read()
    expect(log.count('"reason":"no_certificate"') >= len(attacks), "refusals logged (no_certificate)")
    expect(log.count('"reason":"unknown_certificate"') >= len(attacks), "refusals logged (unknown_certificate)")


def make_foreign_client_cert(ctx):
    """A client certificate with ARM's subject from a CA the frontend does not know."""
    d = ctx.path("foreign")
    os.makedirs(d)
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=60)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{d}/ca-key.pem", "-out", f"{d}/ca.pem", "-subj", "/CN=hcprp local CA", "-days", "2")
    run("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{d}/key.pem", "-out", f"{d}/req.pem", "-subj", "/CN=hcprp local ARM")
    run("openssl", "x509", "-req", "-in", f"{d}/req.pem", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca-key.pem",
        "-CAcreateserial", "-out", f"{d}/cert.pem", "-days", "2")
    c = ssl.create_default_context(cafile=ctx.tls.ca)
    c.load_cert_chain(f"{d}/cert.pem", f"{d}/key.pem")
    return c


def test_plaintext_on_the_tls_port_is_refused(ctx):
    arm_url, _, _, _ = direct(ctx)
    host, port = arm_url.split("://")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"GET /subscriptions/x?api-version=2.0 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        answer = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    expect(answer.startswith(b"HTTP/1.1 400"), f"plaintext answer: {answer[:200]!r}")


def test_cluster_service_and_control_api_are_protected(ctx):
    _, cs, control, _ = direct(ctx)
    expect(cs.startswith("https://"), f"Cluster Service URL {cs}")
    # Without the resource provider's certificate the handshake itself fails.
    try:
        urllib.request.urlopen(cs + "/api/aro_hcp/v1alpha1/clusters", timeout=10,
                               context=no_cert_context(ctx)).read()
        raise e2e.TestFailure("the Cluster Service answered a caller without a certificate")
    except (urllib.error.URLError, ssl.SSLError, ConnectionError):
        pass
    r = http_request("GET", cs + "/api/aro_hcp/v1alpha1/clusters", context=ctx.tls.rp_context())
    expect_eq(r.status, 200, "Cluster Service with the RP certificate")
    # Changing /control calls are not on the API listener ...
    r = http_request("PUT", cs + "/control/faults/http", {"error_count": 5}, context=ctx.tls.rp_context())
    expect_eq(r.status, 404, "control on the API listener")
    # ... and on the control listener they need the token.
    base = control[:-len("/control")]
    expect_eq(http_request("PUT", base + "/control/faults/http", {"error_count": 5}).status, 401, "no token")
    expect_eq(http_request("PUT", base + "/control/faults/http", {"error_count": 5},
                           {"Authorization": "Bearer wrong-token-wrong-token"}).status, 401, "wrong token")
    r = http_request("DELETE", base + "/control/faults", headers={"Authorization": "Bearer " + ctx.tls.control_token()})
    expect(r.status in (200, 204), f"control with the token: {r!r}")


def test_insecure_http_only_on_loopback(ctx):
    r = subprocess.run([e2e.ARGS.hcprp, "serve", "--data-dir", ctx.path("x"), "--listen", "0.0.0.0:0",
                        "--insecure-http"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    expect(r.returncode != 0, "serve --insecure-http on 0.0.0.0 must fail")
    expect(b"loopback" in r.stderr, f"message: {r.stderr[-500:]!r}")


if __name__ == "__main__":
    run_tests([test_only_arm_reaches_the_api, test_plaintext_on_the_tls_port_is_refused,
               test_cluster_service_and_control_api_are_protected, test_insecure_http_only_on_loopback])
