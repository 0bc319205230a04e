"""The proxy on its own thread and event loop, for the command line and a window alike: start, subscribe, stop.

A window's Traffic tab subscribes to the events (RequestStarted, RequestProgress, RequestFinished); they are
delivered on the proxy's thread, so a Qt tab hands them on with a queued signal and never touches widgets there.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import threading

from core.proxy.server import ProxyServer
from core.proxy.subscribers import Subscriber, Subscribers
from core.proxy.upstream import Upstream
from core.settings import PROXY_HOST


class ProxyStartError(RuntimeError):
    """The proxy could not listen; the message says why (the port taken, an address not this machine's)."""


class ProxyThread:
    def __init__(self, upstream: str | Upstream, *, host: str = PROXY_HOST, port: int = 0, keep_bodies: bool = False):
        """upstream: the server's URL (BadUpstream if it is not one); port 0: a free one."""
        self.upstream = upstream if isinstance(upstream, Upstream) else Upstream.parse(upstream)
        self.host, self.port = host, port
        self.keep_bodies = keep_bodies
        self._subscribers = Subscribers()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def loopback_only(self) -> bool:
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return self.host == "localhost"

    def subscribe(self, callback: Subscriber):
        """Hear every request's events from now on (on the proxy's thread); returns a function that stops it."""
        return self._subscribers.add(callback)

    def start(self, timeout_s: float = 10.0) -> ProxyThread:
        """Return once the proxy listens (self.port is then its port); ProxyStartError if it cannot."""
        if self._thread is not None:
            raise RuntimeError("this proxy was already started")
        self._thread = threading.Thread(target=self._run, name="latencylab-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            self.stop()
            raise ProxyStartError(f"the proxy did not start listening within {timeout_s:g} s")
        if self._failure is not None:
            self._thread.join(timeout_s)
            raise ProxyStartError(f"could not listen on {self.host}:{self.port}: {self._failure}") from self._failure
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the proxy: stop listening, cut requests still running (closing their upstream requests), and wait."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._failure is None

    def __enter__(self) -> ProxyThread:
        return self.start()

    def __exit__(self, *_) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # noqa: BLE001 - told to start(), which raises it on the caller's thread
            self._failure = self._failure or error
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = ProxyServer(self.upstream, self._subscribers, keep_bodies=self.keep_bodies)
        try:
            self.port = await server.start(self.host, self.port)
        except OSError as error:
            self._failure = error
            return
        finally:
            self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await server.close()
