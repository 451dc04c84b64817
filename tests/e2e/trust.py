#!/usr/bin/env python3
"""What an operator trusts hcprp with, probed from outside: the admin listener off loopback speaks TLS and
keeps /metrics behind its token, the data directory and its databases are the owner's alone, the Cluster
Service lets in the resource provider's certificate only, an unauthenticated caller is refused on its
headers (no 100 Continue, its body unread), the console's cookie is not the token and serves no other
origin, and the frontend follows ARM's client-certificate metadata through rotation and outage."""

import datetime
import hashlib
import json
import os
import socket
import ssl
import stat
import subprocess
import time
import base64

from e2e import expect, expect_eq, http_request, run_tests, url_after, wait_until
import e2e


def serve(ctx, name="serve", extra=()):
    data = ctx.path(name)
    p = ctx.spawn(name, [e2e.ARGS.hcprp, "serve", "--data-dir", data, "--listen", "127.0.0.1:0",
                         "--profile", "instant", "--tls-dir", ctx.tls.dir, *extra])
    arm = p.wait_line(url_after("ARM endpoint:"))
    cs = p.wait_line(url_after("Cluster Service:"))
    control = p.wait_line(url_after("simulator control:"))
    metrics = p.wait_line(url_after("metrics:"))
    p.wait_line(lambda line: "Stop with" in line)
    return data, arm, cs, control, metrics, p


def raw_exchange(host, port, raw, context=None, timeout=10):
    """Sends `raw` and returns (answer, seconds until the connection closed)."""
    start = time.monotonic()
    with socket.create_connection((host, port), timeout=timeout) as plain:
        s = context.wrap_socket(plain, server_hostname=host) if context else plain
        s.sendall(raw)
        answer = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
    return answer, time.monotonic() - start


def host_port(url):
    hp = url.split("://")[1].split("/")[0]
    host, port = hp.rsplit(":", 1)
    return host, int(port)


def test_admin_listener_off_loopback_needs_tls_and_the_token(ctx):
    r = subprocess.run([e2e.ARGS.hcprp, "serve", "--data-dir", ctx.path("plain"), "--insecure-http",
                        "--admin-listen", "0.0.0.0:0"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    expect(r.returncode != 0, "an admin listener off loopback without TLS must be refused")
    expect(b"loopback" in r.stderr, f"message: {r.stderr[-500:]!r}")
    data, _, _, _, metrics, _ = serve(ctx, extra=("--admin-listen", "0.0.0.0:0"))
    expect(metrics.startswith("https://"), f"admin listener off loopback is HTTPS: {metrics}")
    _, port = host_port(metrics)
    url = f"https://127.0.0.1:{port}/metrics"
    anonymous = ssl.create_default_context(cafile=ctx.tls.ca)
    expect_eq(http_request("GET", url, context=anonymous).status, 401, "/metrics without the token")
    with open(os.path.join(data, "admin-token")) as f:
        token = f.read().strip()
    r = http_request("GET", url, headers={"Authorization": "Bearer " + token}, context=anonymous)
    expect_eq(r.status, 200, "/metrics with the token")
    answer, _ = raw_exchange("127.0.0.1", port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    expect(answer.startswith(b"HTTP/1.1 400"), f"plain HTTP on the admin TLS port: {answer[:100]!r}")


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_data_dir_is_the_owners_alone(ctx):
    data, _, _, _, _, p = serve(ctx)
    cs_db = os.path.join(data, "clusters-service", "simulator.db")
    secrets = [os.path.join(data, "hcprp.db"), cs_db, os.path.join(data, "admin-token")]
    secrets += [f + s for f in (os.path.join(data, "hcprp.db"), cs_db) for s in ("-wal", "-shm", "-journal")
                if os.path.exists(f + s)]
    expect_eq(oct(mode(data)), oct(0o700), "data dir")
    for f in secrets:
        expect_eq(oct(mode(f)), oct(0o600), f)
    p.stop()
    # What an older version left readable is tightened at the next start.
    os.chmod(data, 0o755)
    for f in secrets:
        if os.path.exists(f):
            os.chmod(f, 0o644)
    serve(ctx, name="serve")
    expect_eq(oct(mode(data)), oct(0o700), "data dir after restart")
    for f in secrets:
        if os.path.exists(f):
            expect_eq(oct(mode(f)), oct(0o600), f + " after restart")


def test_cluster_service_lets_in_the_resource_provider_only(ctx):
    _, _, cs, control, _, _ = serve(ctx)
    r = http_request("GET", cs + "/api/aro_hcp/v1alpha1/clusters", context=ctx.tls.arm_context())
    expect_eq(r.status, 401, "the Cluster Service with ARM's client certificate")
    r = http_request("GET", cs + "/api/aro_hcp/v1alpha1/clusters", context=ctx.tls.rp_context())
    expect_eq(r.status, 200, "the Cluster Service with the resource provider's certificate")
    # The bearer scheme is case-insensitive (RFC 9110).
    base = control[:-len("/control")]
    r = http_request("DELETE", base + "/control/faults", headers={"Authorization": "bearer " + ctx.tls.control_token()})
    expect(r.status in (200, 204), f"control with a lower-case scheme: {r!r}")


def ca_signed_client_cert(ctx, name, subject, dns_names):
    """A client certificate of the local CA with `subject` and the subjectAltName DNS entries `dns_names`."""
    d = ctx.path(name)
    os.makedirs(d)
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("extendedKeyUsage = clientAuth\n")
        if dns_names:
            f.write("subjectAltName = " + ", ".join("DNS:" + n for n in dns_names) + "\n")
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", f"{d}/key.pem", "-out", f"{d}/req.pem", "-subj", subject],
                   check=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    subprocess.run(["openssl", "x509", "-req", "-in", f"{d}/req.pem", "-CA", ctx.tls.ca,
                    "-CAkey", os.path.join(ctx.tls.dir, "ca-key.pem"), "-CAcreateserial", "-days", "2",
                    "-extfile", ext, "-out", f"{d}/cert.pem"],
                   check=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    c = ssl.create_default_context(cafile=ctx.tls.ca)
    c.load_cert_chain(f"{d}/cert.pem", f"{d}/key.pem")
    return c


def test_cluster_service_names_the_resource_provider_by_its_dns_names_first(ctx):
    """RFC 6125: a certificate with DNS names is named by them, its common name counts only without any."""
    _, _, cs, _, _, _ = serve(ctx)
    url = cs + "/api/aro_hcp/v1alpha1/clusters"
    impostor = ca_signed_client_cert(ctx, "impostor", "/CN=hcprp resource provider", ["intruder.example"])
    expect_eq(http_request("GET", url, context=impostor).status, 401,
              "the resource provider's common name on a certificate whose DNS name is another's")
    plain = ca_signed_client_cert(ctx, "plain", "/CN=hcprp resource provider", [])
    expect_eq(http_request("GET", url, context=plain).status, 200, "the common name of a certificate without DNS names")
    _, _, cs2, _, _, _ = serve(ctx, "serve-dns", ("--clusters-service-client-name", "rp.hcprp.example"))
    url2 = cs2 + "/api/aro_hcp/v1alpha1/clusters"
    named = ca_signed_client_cert(ctx, "named", "/CN=someone else", ["other.example", "RP.hcprp.example"])
    expect_eq(http_request("GET", url2, context=named).status, 200, "a DNS name matching the configured name")
    by_cn = ca_signed_client_cert(ctx, "by-cn", "/CN=rp.hcprp.example", ["other.example"])
    expect_eq(http_request("GET", url2, context=by_cn).status, 401, "the configured name as common name only")


def test_unauthenticated_callers_are_refused_on_their_headers(ctx):
    data, arm, _, control, metrics, _ = serve(ctx)
    host, port = host_port(arm)
    anonymous = ssl.create_default_context(cafile=ctx.tls.ca)
    body_len = 4 * 1024 * 1024
    raw = (f"PUT /subscriptions/00000000-0000-0000-0000-000000000001?api-version=2.0 HTTP/1.1\r\nHost: {host}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {body_len}\r\nExpect: 100-continue\r\n\r\n").encode()
    answer, took = raw_exchange(host, port, raw, context=anonymous)
    expect(answer.startswith(b"HTTP/1.1 401"), f"ARM listener without a certificate: {answer[:200]!r}")
    expect(b"100 Continue" not in answer, "no 100 Continue before the refusal")
    expect(took < 5, f"answered and closed at once, not after a body: {took:.1f} s")
    ahost, aport = host_port(metrics)
    raw = (f"POST /admin/operations/s/o/fail HTTP/1.1\r\nHost: {ahost}:{aport}\r\nContent-Length: 60000\r\n"
           f"Expect: 100-continue\r\n\r\n").encode()
    answer, took = raw_exchange(ahost, aport, raw)
    expect(answer.startswith(b"HTTP/1.1 401"), f"admin listener without the token: {answer[:200]!r}")
    expect(b"100 Continue" not in answer and took < 5, f"admin refusal: {answer[:100]!r} after {took:.1f} s")
    chost, cport = host_port(control)
    raw = (f"POST /control/faults HTTP/1.1\r\nHost: {chost}:{cport}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {body_len}\r\nExpect: 100-continue\r\n\r\n").encode()
    answer, took = raw_exchange(chost, cport, raw)
    expect(answer.startswith(b"HTTP/1.1 401"), f"control listener without the token: {answer[:200]!r}")
    expect(b"100 Continue" not in answer and took < 5, f"control refusal: {answer[:100]!r} after {took:.1f} s")
    # The console's cookie is a session value, not the token, and another page on 127.0.0.1 cannot use it.
    with open(os.path.join(data, "admin-token")) as f:
        token = f.read().strip()
    answer, _ = raw_exchange(ahost, aport, f"GET /console/?token={token} HTTP/1.1\r\nHost: {ahost}:{aport}\r\n"
                                           f"Connection: close\r\n\r\n".encode())
    cookie_line = next(l for l in answer.decode().split("\r\n") if l.lower().startswith("set-cookie:"))
    expect(token not in cookie_line, f"the cookie is not the token: {cookie_line}")
    cookie = cookie_line.split(":", 1)[1].strip().split(";")[0]
    base = f"http://{ahost}:{aport}"
    r = http_request("GET", base + "/admin/console/summary", headers={"Cookie": cookie})
    expect_eq(r.status, 200, "the console's own read")
    r = http_request("POST", base + "/admin/operations/s/o/fail", {"reason": "x"},
                     headers={"Cookie": cookie, "Origin": "http://127.0.0.1:1"})
    expect_eq(r.status, 403, "a cross-origin POST carrying the cookie")


def metadata_document(cert_paths):
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    entries = []
    for path in cert_paths:
        with open(path) as f:
            der = ssl.PEM_cert_to_DER_cert(f.read())
        entries.append({"thumbprint": hashlib.sha1(der).hexdigest().upper(),
                        "notBefore": (now - datetime.timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
                        "notAfter": (now + datetime.timedelta(days=1)).isoformat().replace("+00:00", "Z"),
                        "certificate": base64.b64encode(der).decode()})
    return json.dumps({"clientCertificates": entries})


def write_atomically(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def new_client_cert(ctx, name):
    d = ctx.path(name)
    os.makedirs(d)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem", "-subj", "/CN=ARM rotated",
                    "-days", "2"], check=True, capture_output=True, timeout=60)
    c = ssl.create_default_context(cafile=ctx.tls.ca)
    c.load_cert_chain(f"{d}/cert.pem", f"{d}/key.pem")
    return f"{d}/cert.pem", c


def test_frontend_follows_arm_metadata_through_rotation_and_outage(ctx):
    published = ctx.path("published.json")
    cs = ctx.spawn("cs", [e2e.ARGS.hcprp, "clusters-service", "--listen", "127.0.0.1:0", "--data-dir",
                          ctx.path("cs"), "--tls-dir", ctx.tls.dir, "--arm-metadata-file", published])
    cs_url = cs.wait_line(url_after("listening on"))
    control = cs.wait_line(url_after("simulator control:"))
    write_atomically(published, metadata_document([ctx.tls.client_cert]))
    metadata_url = control[:-len("/control")] + "/metadata/authentication"
    cache = ctx.path("arm-trusted.json")
    argv = [e2e.ARGS.hcprp, "frontend", "--store", "sqlite://" + ctx.path("fe.db"), "--clusters-service", cs_url,
            "--listen", "127.0.0.1:0", "--tls-dir", ctx.tls.dir, "--admin-listen", "off",
            "--arm-trusted-certs", cache, "--arm-metadata-url", metadata_url, "--arm-metadata-refresh-seconds", "0.5"]
    fe = ctx.spawn("frontend", argv)
    arm = fe.wait_line(url_after("listening on"))
    path = arm + "/subscriptions/00000000-0000-0000-0000-0000000000a1?api-version=2.0"
    status = lambda context: http_request("GET", path, context=context).status
    expect(status(ctx.tls.arm_context()) != 401, "the published certificate is trusted")
    # ARM rotates: a new certificate replaces the old one at the metadata endpoint.
    new_cert, new_context = new_client_cert(ctx, "rotated")
    expect_eq(status(new_context), 401, "the new certificate before it is published")
    write_atomically(published, metadata_document([new_cert]))
    wait_until(lambda: status(new_context) != 401, timeout=5, what="the rotated certificate accepted")
    wait_until(lambda: status(ctx.tls.arm_context()) == 401, timeout=5, what="the retired certificate refused")
    # The endpoint goes down: the last good copy stays in use, also across a restart.
    cs.stop()
    time.sleep(1.5)
    expect(status(new_context) != 401, "the last good copy while the endpoint is down")
    fe.stop()
    fe = ctx.spawn("frontend", argv)
    arm = fe.wait_line(url_after("listening on"))
    path = arm + "/subscriptions/00000000-0000-0000-0000-0000000000a1?api-version=2.0"
    expect(status(new_context) != 401, "the last good copy after a restart while the endpoint is down")
    expect_eq(status(ctx.tls.arm_context()), 401, "the retired certificate after the restart")


if __name__ == "__main__":
    run_tests([test_admin_listener_off_loopback_needs_tls_and_the_token, test_data_dir_is_the_owners_alone,
               test_cluster_service_lets_in_the_resource_provider_only,
               test_cluster_service_names_the_resource_provider_by_its_dns_names_first,
               test_unauthenticated_callers_are_refused_on_their_headers,
               test_frontend_follows_arm_metadata_through_rotation_and_outage])
