"""A loopback HTTP server that answers any method on any path with what it received, to check what passes through."""

from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler

from tests.support.loopback_server import LoopbackServer


class EchoServer(LoopbackServer):
    """Each answer is JSON: the method, the raw path, the headers as received (in order) and the body (base64);
    it carries the headers in `answer_headers` too (hop-by-hop ones included, to see them dropped)."""

    def __init__(self, answer_headers: list[tuple[str, str]] | None = None):
        self.answer_headers = answer_headers or []
        echo = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                document = {
                    "method": self.command,
                    "path": self.path,
                    "headers": list(self.headers.items()),
                    "body": base64.b64encode(body).decode(),
                }
                data = json.dumps(document).encode()
                self.send_response(200)
                for name, value in echo.answer_headers:
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _answer  # noqa: N815 - http.server's names

        super().__init__(Handler, "echo-server", poll_s=0.05)

    @property
    def root(self) -> str:
        return self.url
