#!/usr/bin/env python3
"""Tests of the capturing proxy (capture.py) against a local raw-socket upstream: the bytes are relayed
unchanged both ways, keep-alive connections carry several exchanges, chunked and Content-Length bodies
are both framed right, an upstream that closed an idle connection is reconnected to, and every exchange
is written as one oav traffic file."""

import json
import os
import socket
import socketserver
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture import CaptureProxy  # noqa: E402


class Upstream:
    """Answers each request with the next canned raw response; records the raw requests it read."""

    def __init__(self, responses, close_after_each=False):
        self.responses = list(responses)
        self.requests = []
        self.connections = 0
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                outer.connections += 1
                while outer.responses:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = self.rfile.readline()
                        if not line:
                            return
                        head += line
                    n = 0
                    for ln in head.split(b"\r\n"):
                        if ln.lower().startswith(b"content-length:"):
                            n = int(ln.split(b":")[1])
                    outer.requests.append(head + self.rfile.read(n))
                    self.wfile.write(outer.responses.pop(0))
                    self.wfile.flush()
                    if close_after_each:
                        return

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def exchange(sock, raw_request):
    """Sends a request on `sock` and reads one response framed by Content-Length or chunked encoding."""
    sock.sendall(raw_request)
    f = sock.makefile("rb")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = f.readline()
        if not line:
            raise AssertionError(f"connection closed; head so far {head!r}")
        head += line
    body = b""
    if b"chunked" in head.lower():
        while True:
            size_line = f.readline()
            body += size_line
            size = int(size_line.strip(), 16)
            chunk = f.read(size + 2)
            body += chunk
            if size == 0:
                break
    else:
        for ln in head.split(b"\r\n"):
            if ln.lower().startswith(b"content-length:"):
                body = f.read(int(ln.split(b":")[1]))
    return head + body


class CaptureProxyTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="capture-test-")
        self.closers = []

    def tearDown(self):
        for c in self.closers:
            c()

    def proxy(self, upstream):
        p = CaptureProxy(upstream.url, self.dir, "t")
        self.closers += [p.close, upstream.close]
        return p

    def captures(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            with open(os.path.join(self.dir, name)) as f:
                out.append(json.load(f))
        return out

    def test_bytes_unchanged_keep_alive_and_traffic_files(self):
        body1 = b'{"id":"/x","etag":"\\"1\\"","n":1}'
        resp1 = (b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nAzure-AsyncOperation: http://a/b\r\n"
                 b"Content-Length: " + str(len(body1)).encode() + b"\r\n\r\n" + body1)
        resp2 = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n")
        up = Upstream([resp1, resp2])
        p = self.proxy(up)
        req_body = b'{"location": "eastus",  "tags": {}}'
        req1 = (b"PUT /subscriptions/s/x?api-version=2026-10-01 HTTP/1.1\r\nHost: " + p.url[7:].encode()
                + b"\r\nX-Ms-Home-Tenant-Id: t\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(req_body)).encode() + b"\r\n\r\n" + req_body)
        req2 = b"GET /s/y?api-version=2026-10-01 HTTP/1.1\r\nHost: h\r\n\r\n"
        with socket.create_connection(("127.0.0.1", int(p.url.rsplit(":", 1)[1])), timeout=10) as s:
            self.assertEqual(exchange(s, req1), resp1)
            self.assertEqual(exchange(s, req2), resp2)
        self.assertEqual(up.requests, [req1, req2])
        self.assertEqual(up.connections, 1)
        caps = self.captures()
        self.assertEqual(len(caps), 2)
        first = caps[0]
        self.assertEqual(first["liveRequest"]["method"], "PUT")
        self.assertEqual(first["liveRequest"]["url"], p.url + "/subscriptions/s/x?api-version=2026-10-01")
        self.assertEqual(first["liveRequest"]["headers"]["X-Ms-Home-Tenant-Id"], "t")
        self.assertEqual(first["liveRequest"]["body"], {"location": "eastus", "tags": {}})
        self.assertEqual(first["liveResponse"]["statusCode"], "201")
        self.assertEqual(first["liveResponse"]["headers"]["Azure-AsyncOperation"], "http://a/b")
        self.assertEqual(first["liveResponse"]["body"], {"id": "/x", "etag": '"1"', "n": 1})
        second = caps[1]
        self.assertIsNone(second["liveRequest"]["body"])
        self.assertEqual(second["liveResponse"]["body"], {"a": 1})

    def test_reconnects_when_the_upstream_closed_an_idle_connection(self):
        ok = b"HTTP/1.1 204 No Content\r\n\r\n"
        up = Upstream([ok, ok], close_after_each=True)
        p = self.proxy(up)
        req = b"DELETE /s/z?api-version=2026-10-01 HTTP/1.1\r\nHost: h\r\n\r\n"
        with socket.create_connection(("127.0.0.1", int(p.url.rsplit(":", 1)[1])), timeout=10) as s:
            self.assertEqual(exchange(s, req), ok)
            self.assertEqual(exchange(s, req), ok)
        self.assertEqual(up.connections, 2)
        self.assertEqual([c["liveResponse"]["statusCode"] for c in self.captures()], ["204", "204"])

    def test_non_json_body_is_kept_as_text(self):
        resp = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbad"
        up = Upstream([resp])
        p = self.proxy(up)
        req = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n{no}"
        with socket.create_connection(("127.0.0.1", int(p.url.rsplit(":", 1)[1])), timeout=10) as s:
            self.assertEqual(exchange(s, req), resp)
        cap = self.captures()[0]
        self.assertEqual(cap["liveRequest"]["body"], "{no}")
        self.assertEqual(cap["liveResponse"]["body"], "bad")


if __name__ == "__main__":
    unittest.main()
