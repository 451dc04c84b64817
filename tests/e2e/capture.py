"""A capturing reverse proxy for the end-to-end tests (Python standard library only).

CaptureProxy listens on a free 127.0.0.1 port and forwards every HTTP/1.1 exchange to one upstream
(an hcprp frontend), byte for byte: the request line, headers and body the client sent, and the status
line, headers and body the frontend answered, are relayed unchanged (the Host header too, so the URLs
hcprp builds from it keep pointing at the proxy). Each client connection gets its own upstream
connection and both are kept alive as long as both sides allow it.

Every exchange is also written to the capture directory as one JSON file in oav's traffic format:

    {"liveRequest": {"headers", "method", "url", "body"},
     "liveResponse": {"statusCode", "headers", "body"}}

Bodies are parsed JSON when they parse, the text otherwise, and null when empty. A file is written before
the client receives the response. File names sort in the order the responses were read from the
frontend: <prefix>-<sequence>.json.
"""

import itertools
import json
import os
import socket
import socketserver
import ssl
import threading

MAX_HEAD = 1 << 20


class _Closed(Exception):
    """The peer closed the connection at a message boundary."""


def _read_head(rfile):
    """Reads a start line and headers; returns (raw bytes, start line, [(name, value)])."""
    raw = b""
    while True:
        line = rfile.readline(MAX_HEAD)
        if not line:
            if raw:
                raise ConnectionError("connection closed inside a message head")
            raise _Closed()
        if not raw and line in (b"\r\n", b"\n"):
            continue  # tolerated blank lines between messages
        raw += line
        if len(raw) > MAX_HEAD:
            raise ConnectionError("message head too large")
        if line in (b"\r\n", b"\n"):
            break
    lines = raw.decode("iso-8859-1").split("\r\n" if b"\r\n" in raw else "\n")
    start = lines[0]
    headers = []
    for ln in lines[1:]:
        if not ln:
            continue
        if ln[0] in " \t" and headers:  # obsolete line folding
            name, value = headers[-1]
            headers[-1] = (name, value + " " + ln.strip())
            continue
        name, _, value = ln.partition(":")
        headers.append((name.strip(), value.strip()))
    return raw, start, headers


def _header(headers, name):
    values = [v for n, v in headers if n.lower() == name]
    return ", ".join(values) if values else None


def _read_body(rfile, headers, until_close):
    """Reads a body framed by the headers; returns (raw bytes as sent, decoded body bytes)."""
    te = (_header(headers, "transfer-encoding") or "").lower()
    if "chunked" in te:
        raw = b""
        body = b""
        while True:
            size_line = rfile.readline(MAX_HEAD)
            if not size_line:
                raise ConnectionError("connection closed inside a chunked body")
            raw += size_line
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers up to the blank line
                    t = rfile.readline(MAX_HEAD)
                    if not t:
                        raise ConnectionError("connection closed inside chunked trailers")
                    raw += t
                    if t in (b"\r\n", b"\n"):
                        return raw, body
            chunk = _read_exact(rfile, size)
            crlf = rfile.readline(MAX_HEAD)
            raw += chunk + crlf
            body += chunk
    length = _header(headers, "content-length")
    if length is not None:
        data = _read_exact(rfile, int(length.split(",")[0].strip()))
        return data, data
    if until_close:
        data = rfile.read()
        return data, data
    return b"", b""


def _read_exact(rfile, n):
    data = rfile.read(n) if n else b""
    if len(data) != n:
        raise ConnectionError(f"connection closed after {len(data)} of {n} body bytes")
    return data


def _keep_alive(start, headers):
    conn = (_header(headers, "connection") or "").lower()
    if "close" in conn:
        return False
    return not start.upper().startswith("HTTP/1.0") or "keep-alive" in conn


def _body_value(data, headers):
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _header_object(headers):
    out = {}
    for name, value in headers:
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


class CaptureProxy:
    """Relays 127.0.0.1:<port> to `upstream` ("http://host:port" or "https://host:port") and records every
    exchange.

    With `tls` (an object with .ca, .server_cert, .server_key, .client_cert, .client_key paths) the proxy plays
    ARM: it listens with HTTPS, asks its clients for a certificate of that CA, and calls an https upstream with
    the ARM client certificate."""

    def __init__(self, upstream, out_dir, prefix, tls=None):
        scheme, rest = upstream.split("://", 1)
        rest = rest.rstrip("/")
        host, _, port = rest.partition(":")
        self.upstream = (host, int(port or (443 if scheme == "https" else 80)))
        self.upstream_ssl = None
        self.client_ssl = None
        if tls is not None:
            self.client_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls.ca)
            self.client_ssl.load_cert_chain(tls.server_cert, tls.server_key)
            self.client_ssl.verify_mode = ssl.CERT_REQUIRED
        if scheme == "https":
            if tls is None:
                raise ValueError("an https upstream needs the TLS files")
            self.upstream_ssl = ssl.create_default_context(cafile=tls.ca)
            self.upstream_ssl.load_cert_chain(tls.client_cert, tls.client_key)
        self.out_dir = out_dir
        self.prefix = prefix
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self.count = 0
        os.makedirs(out_dir, exist_ok=True)
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                if proxy.client_ssl is None:
                    proxy._serve_connection(self.connection, self.rfile)
                    return
                try:
                    conn = proxy.client_ssl.wrap_socket(self.connection, server_side=True)
                except (OSError, ssl.SSLError):
                    return  # no certificate of the CA, or not TLS: the handshake failed
                with conn, conn.makefile("rb") as rfile:
                    proxy._serve_connection(conn, rfile)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.scheme = "https" if self.client_ssl else "http"
        self.url = f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _exchange(self, up, up_in, request):
        """Sends `request` upstream and reads the answer head; returns (up, up_in, head) with a new
        connection when there was none, or when a reused one turned out closed by the frontend while
        idle (nothing was read: the request is sent again on a fresh connection, as HTTP clients do)."""
        reused = up is not None
        for _ in range(2):
            if up is None:
                up = socket.create_connection(self.upstream, timeout=600)
                if self.upstream_ssl is not None:
                    up = self.upstream_ssl.wrap_socket(up, server_hostname=self.upstream[0])
                up_in = up.makefile("rb")
            try:
                up.sendall(request)
                return up, up_in, _read_head(up_in)
            except (_Closed, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError):
                up_in.close()
                up.close()
                up = up_in = None
                if not reused:
                    raise ConnectionError("upstream closed the connection before answering")
                reused = False
        raise ConnectionError("upstream closed the connection before answering")

    def _serve_connection(self, client, client_in):
        up = up_in = None
        try:
            while True:
                try:
                    req_raw, req_line, req_headers = _read_head(client_in)
                except _Closed:
                    return
                req_body_raw, req_body = _read_body(client_in, req_headers, until_close=False)
                up, up_in, (resp_raw, status_line, resp_headers) = self._exchange(up, up_in,
                                                                                   req_raw + req_body_raw)
                method = req_line.split(" ", 1)[0].upper()
                status = int(status_line.split(" ")[1])
                no_body = method == "HEAD" or status < 200 or status in (204, 304)
                resp_body_raw, resp_body = (b"", b"") if no_body else _read_body(
                    up_in, resp_headers, until_close=True)
                # Written before the client has the answer: a test that ends right after its last call
                # leaves no exchange unrecorded.
                self._record(req_line, req_headers, req_body, status, resp_headers, resp_body)
                client.sendall(resp_raw + resp_body_raw)
                if not (_keep_alive(req_line.rsplit(" ", 1)[-1], req_headers)
                        and _keep_alive(status_line, resp_headers)):
                    return
        except (OSError, ConnectionError, ValueError, IndexError):
            return  # the client sees the connection close, as it would without the proxy
        finally:
            for s in (up_in, up):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def _record(self, req_line, req_headers, req_body, status, resp_headers, resp_body):
        parts = req_line.split(" ")
        method, target = parts[0], parts[1] if len(parts) > 1 else "/"
        host = _header(req_headers, "host") or "%s:%d" % self.upstream
        url = target if target.startswith("http://") or target.startswith("https://") else f"{self.scheme}://{host}{target}"
        pair = {
            "liveRequest": {"headers": _header_object(req_headers), "method": method, "url": url,
                            "body": _body_value(req_body, req_headers)},
            "liveResponse": {"statusCode": str(status), "headers": _header_object(resp_headers),
                             "body": _body_value(resp_body, resp_headers)},
        }
        with self._lock:
            n = next(self._seq)
            self.count += 1
        path = os.path.join(self.out_dir, f"{self.prefix}-{n:06d}.json")
        with open(path, "w") as f:
            json.dump(pair, f, indent=1)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
