"""A threaded HTTP server on 127.0.0.1 for the tests' own servers: started by `with`, shut and joined on leaving."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """Serves handler on a free loopback port on a daemon thread; url is its root. Subclasses give the handler."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str, poll_s: float = 0.5):
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, args=(poll_s,), name=name, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)
