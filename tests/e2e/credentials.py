#!/usr/bin/env python3
"""Break-glass credentials with a certificate signing request, against `hcprp serve`: a CSR made with
the openssl command line goes through requestAdminCredential (2026-10-01), the kubeconfig's client
certificate passes `openssl verify` against the CA in the same kubeconfig, the simulator lists it and
its check endpoint accepts it; after revokeCredentials the check endpoint refuses it. Also: CSR
validation errors, and the body-less form of the older api-versions."""

import base64
import json
import os
import subprocess

import e2e
from e2e import (Arm, CsClient, expect, expect_eq, run_tests)

SUBJECT = "/O=system:masters/CN=system:customer-break-glass:system-admin"
OLD_API_VERSION = "2024-06-10-preview"


def openssl(*args, stdin=None):
    r = subprocess.run(["openssl", *args], input=stdin, capture_output=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def make_csr(ctx, name, subject=SUBJECT):
    key, csr = ctx.path(f"{name}.key"), ctx.path(f"{name}.csr")
    rc, out = openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", key, "-out", csr, "-subj", subject)
    expect_eq(rc, 0, f"openssl req: {out}")
    with open(csr) as f:
        return key, f.read()


def kubeconfig_data(kubeconfig, field):
    for line in kubeconfig.splitlines():
        line = line.strip()
        if line.startswith(field + ":"):
            return base64.b64decode(line.split(":", 1)[1].strip()).decode()
    return None


def ready_cluster(ctx, name):
    endpoint, cs_url, _ = ctx.serve(profile="demo", time_scale="0.2")
    arm = Arm(endpoint)
    arm.register()
    r = arm.call("PUT", arm.cluster_path(name), arm.cluster_body(name))
    expect_eq(r.status, 201, f"create {name} ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"cluster create (seen {seen})")
    cs = CsClient(cs_url)
    items = cs.clusters(arm.subscription)["items"]
    expect_eq(len(items), 1, "Cluster Service clusters of the subscription")
    return arm, cs, items[0]["href"]


def request_credential(arm, name, body, api_version="2026-10-01"):
    r = arm.call("POST", arm.cluster_path(name) + "/requestAdminCredential", body, api_version=api_version)
    expect_eq(r.status, 202, f"requestAdminCredential ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"credential operation (seen {seen})")
    res = arm.call("GET", r.header("Location"))
    expect_eq(res.status, 200, f"credential result ({res!r})")
    expect_eq(sorted(res.body), ["expirationTimestamp", "kubeconfig"], "credential result properties")
    return res.body


def check(cs, cluster_href, pem):
    return cs.call("POST", f"{cluster_href}/credentials/check", {"certificate": pem})


def test_csr_sign_verify_revoke(ctx):
    arm, cs, href = ready_cluster(ctx, "k1")
    key, csr = make_csr(ctx, "admin")
    result = request_credential(arm, "k1", {"certificateSigningRequest": csr})
    kubeconfig = result["kubeconfig"]
    cert, ca = kubeconfig_data(kubeconfig, "client-certificate-data"), kubeconfig_data(
        kubeconfig, "certificate-authority-data")
    expect(cert and "BEGIN CERTIFICATE" in cert, f"kubeconfig without a client certificate: {kubeconfig}")
    expect(ca and "BEGIN CERTIFICATE" in ca, f"kubeconfig without the cluster CA: {kubeconfig}")
    expect(kubeconfig_data(kubeconfig, "client-key-data") is None, "the key stays with the caller")
    with open(ctx.path("cert.pem"), "w") as f:
        f.write(cert)
    with open(ctx.path("ca.pem"), "w") as f:
        f.write(ca)
    rc, out = openssl("verify", "-CAfile", ctx.path("ca.pem"), ctx.path("cert.pem"))
    expect_eq(rc, 0, f"openssl verify: {out}")
    rc, subject = openssl("x509", "-noout", "-subject", "-nameopt", "compat", "-in", ctx.path("cert.pem"))
    expect_eq(subject.strip(), "subject=" + SUBJECT, "certificate subject")
    _, cert_pub = openssl("x509", "-noout", "-pubkey", "-in", ctx.path("cert.pem"))
    _, key_pub = openssl("pkey", "-pubout", "-in", key)
    expect_eq(cert_pub, key_pub, "the certificate carries the CSR's key")
    rc, enddate = openssl("x509", "-noout", "-enddate", "-dateopt", "iso_8601", "-in", ctx.path("cert.pem"))
    expect(result["expirationTimestamp"][:16].replace("T", " ") in enddate,
           f"expirationTimestamp {result['expirationTimestamp']} vs certificate {enddate}")

    listed = cs.call("GET", f"{href}/credentials/certificates")
    expect_eq(listed.status, 200, f"issued certificates ({listed!r})")
    expect_eq(len(listed.body["items"]), 1, "issued certificates")
    expect_eq(listed.body["items"][0]["revoked"], False, "revoked before revokeCredentials")
    expect_eq(listed.body["certificate_authority"], ca, "the simulator's CA is the kubeconfig's")
    ok = check(cs, href, cert)
    expect_eq(ok.status, 200, f"check of a valid certificate ({ok!r})")
    expect_eq(ok.body["valid"], True, "check answer")

    # A certificate from another CA is refused.
    rc, out = openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", ctx.path("self.key"), "-out", ctx.path("self.pem"), "-subj", SUBJECT,
                      "-days", "1")
    expect_eq(rc, 0, f"openssl req -x509: {out}")
    with open(ctx.path("self.pem")) as f:
        foreign = check(cs, href, f.read())
    expect_eq(foreign.status, 403, f"check of a self-signed certificate ({foreign!r})")

    r = arm.call("POST", arm.cluster_path("k1") + "/revokeCredentials")
    expect_eq(r.status, 202, f"revokeCredentials ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"revocation (seen {seen})")
    refused = check(cs, href, cert)
    expect_eq(refused.status, 403, f"check after revocation ({refused!r})")
    expect("revoked" in refused.body.get("reason", ""), f"refusal reason: {refused.body}")
    listed = cs.call("GET", f"{href}/credentials/certificates")
    expect_eq(listed.body["items"][0]["revoked"], True, "revoked after revokeCredentials")

    # A new credential after the revocation is valid again.
    result = request_credential(arm, "k1", {"certificateSigningRequest": csr})
    fresh = check(cs, href, kubeconfig_data(result["kubeconfig"], "client-certificate-data"))
    expect_eq(fresh.status, 200, f"check of a certificate issued after the revocation ({fresh!r})")
    ctx.check()


def test_csr_validation(ctx):
    arm, cs, href = ready_cluster(ctx, "k2")
    path = arm.cluster_path("k2") + "/requestAdminCredential"

    def refused(body, message):
        r = arm.call("POST", path, body)
        expect_eq(r.status, 400, f"requestAdminCredential with {body!r} ({r!r})")
        err = r.body["error"]
        expect_eq(err["code"], "InvalidRequestContent", f"error code ({r!r})")
        expect_eq(err.get("target"), "certificateSigningRequest", f"error target ({r!r})")
        expect_eq(err["message"], message, "error message")

    refused(None, "Required value")
    refused({}, "Required value")
    refused({"certificateSigningRequest": "hello"},
            'Invalid value: "": failed to decode PEM block as CERTIFICATE REQUEST')
    _, csr = make_csr(ctx, "alice", "/O=system:masters/CN=alice")
    refused({"certificateSigningRequest": csr},
            'Invalid value: "alice": subject common name must be "system:customer-break-glass:system-admin"')
    _, csr = make_csr(ctx, "devs", "/O=devs/CN=system:customer-break-glass:system-admin")
    refused({"certificateSigningRequest": csr},
            'Invalid value: ["devs"]: subject organization must be exactly ["system:masters"]')
    listed = cs.call("GET", f"{href}/credentials/certificates")
    expect_eq(listed.body["items"], [], "nothing issued for refused requests")
    ctx.check()


def test_older_api_versions_take_no_csr(ctx):
    arm, cs, href = ready_cluster(ctx, "k3")
    result = request_credential(arm, "k3", None, api_version=OLD_API_VERSION)
    kubeconfig = result["kubeconfig"]
    key = kubeconfig_data(kubeconfig, "client-key-data")
    expect(key and "PRIVATE KEY" in key, "a body-less request gets a key made by the service")
    with open(ctx.path("ca.pem"), "w") as f:
        f.write(kubeconfig_data(kubeconfig, "certificate-authority-data"))
    with open(ctx.path("cert.pem"), "w") as f:
        f.write(kubeconfig_data(kubeconfig, "client-certificate-data"))
    rc, out = openssl("verify", "-CAfile", ctx.path("ca.pem"), ctx.path("cert.pem"))
    expect_eq(rc, 0, f"openssl verify: {out}")
    ctx.check()


def test_hcpctl_request_credential(ctx):
    endpoint, _, _ = ctx.serve(profile="instant")
    sub = "00000000-0000-4000-8000-0000000000c5"

    def hcpctl(*args):
        argv = [e2e.ARGS.hcpctl, "--endpoint", endpoint, "-s", sub, "-g", "cred-rg", "--max-poll-interval", "0.2",
                *args]
        r = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")

    arm = Arm(endpoint, subscription=sub, resource_group="cred-rg")
    arm.register()
    r = arm.call("PUT", arm.cluster_path("cli"), arm.cluster_body("cli"))
    expect_eq(r.status, 201, f"create cli ({r!r})")
    seen, _ = arm.poll_operation(r.header("Azure-AsyncOperation"), timeout=60)
    expect_eq(seen[-1], "Succeeded", f"cluster create (seen {seen})")

    def verify(kubeconfig, what):
        cert = kubeconfig_data(kubeconfig, "client-certificate-data")
        key = kubeconfig_data(kubeconfig, "client-key-data")
        expect(cert and key, f"{what}: kubeconfig without a certificate and its key: {kubeconfig!r}")
        for name, text in (("ca.pem", kubeconfig_data(kubeconfig, "certificate-authority-data")),
                           ("cert.pem", cert), ("key.pem", key)):
            with open(ctx.path(name), "w") as f:
                f.write(text)
        rc, out = openssl("verify", "-CAfile", ctx.path("ca.pem"), ctx.path("cert.pem"))
        expect_eq(rc, 0, f"{what}: openssl verify: {out}")
        _, cert_pub = openssl("x509", "-noout", "-pubkey", "-in", ctx.path("cert.pem"))
        _, key_pub = openssl("pkey", "-pubout", "-in", ctx.path("key.pem"))
        expect_eq(cert_pub, key_pub, f"{what}: the kubeconfig's key is the certificate's")

    # hcpctl makes the key and the CSR (2026-10-01), and puts the key into the kubeconfig it prints.
    rc, out, err = hcpctl("cluster", "request-credential", "cli")
    expect_eq(rc, 0, f"request-credential (stdout {out!r}, stderr {err!r})")
    verify(out, "hcpctl's own CSR")
    # --csr: the caller's request; the kubeconfig has no key.
    _, csr = make_csr(ctx, "mine")
    with open(ctx.path("mine.csr"), "w") as f:
        f.write(csr)
    rc, out, err = hcpctl("cluster", "request-credential", "cli", "--csr", ctx.path("mine.csr"))
    expect_eq(rc, 0, f"request-credential --csr (stdout {out!r}, stderr {err!r})")
    expect(kubeconfig_data(out, "client-key-data") is None, f"--csr: a key in the kubeconfig: {out!r}")
    ctx.check()


if __name__ == "__main__":
    if subprocess.run(["openssl", "version"], capture_output=True).returncode != 0:
        raise SystemExit("the openssl command line is required (Debian package openssl)")
    run_tests([test_csr_sign_verify_revoke, test_csr_validation, test_older_api_versions_take_no_csr,
               test_hcpctl_request_credential])
