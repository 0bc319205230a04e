"""A forward HTTP proxy on 127.0.0.1 that records each request it is asked to carry, for the proxy tests.

A request in absolute form (POST http://host:port/path) is forwarded to its host and the answer sent back whole (a
streamed body arrives at once: enough to show which way a request went). CONNECT, the tunnel an https:// URL asks
for, is recorded and refused, as a proxy that forbids the host does.
"""

from __future__ import annotations

import http.client
import urllib.parse
from http.server import BaseHTTPRequestHandler

from tests.support.loopback_server import LoopbackServer

# Headers that describe one hop, not the request: the proxy sets its own.
_HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class RecordingProxy(LoopbackServer):
    def __init__(self):
        self.requests: list[tuple[str, str]] = []  # (method, target) as the client asked the proxy
        handler = type("Handler", (_Handler,), {"proxy": self})
        super().__init__(handler, "recording-proxy")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: RecordingProxy

    def log_message(self, *_):
        pass

    def do_CONNECT(self):
        self.proxy.requests.append(("CONNECT", self.path))
        self.send_response(403, "Forbidden")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self._forward()

    def do_POST(self):
        self._forward()

    def _forward(self) -> None:
        self.proxy.requests.append((self.command, self.path))
        target = urllib.parse.urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
        upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        try:
            upstream.request(self.command, target.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
