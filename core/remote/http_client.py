"""One HTTP client per server (httpx): connections kept alive, the environment's proxy, sockets a stop can shut."""

from __future__ import annotations

import contextlib
import contextvars
import socket
import ssl
import threading
import typing
import urllib.parse
import urllib.request
import weakref
from collections.abc import Iterable, Iterator, Mapping

import httpcore
import httpx

from core.remote.errors import RemoteError

USER_AGENT = "LatencyLab"
# Below the 5 s after which llama.cpp's server (cpp-httplib) and uvicorn (vLLM) drop an idle connection: a request is
# never sent down a connection the server is closing at that moment.
KEEPALIVE_EXPIRY_S = 4.0


class SocketUser(typing.Protocol):
    """A request, told which socket it goes out on, from its own thread (so it can shut it from another)."""

    def use(self, network: HeldSocket) -> None: ...


# The request this thread is sending: a connection, new or kept alive, is known only inside httpcore's pool, and a
# stop from another thread must reach its socket before the server answers (a long prompt's silence).
_sender: contextvars.ContextVar[SocketUser | None] = contextvars.ContextVar("latencylab_http_sender", default=None)


class HeldSocket(httpcore.NetworkStream):
    """httpcore's socket, which the request holding it can shut from any thread.

    A kept-alive connection serves one request after another: the request that holds it (from its first write until
    its response is closed) is its user, and only the user's shut() reaches it, so a late stop of a finished reply
    never ends the next reply's connection."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner
        self.at_end = False  # the last read found the connection closed
        self.patience_s: float | None = None  # a cap on each read's wait (while a finished body's last bytes come)
        self.requests = 0  # how many have gone down it: past one, it was kept alive for this one
        self._user: SocketUser | None = None
        self._lock = threading.Lock()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self.patience_s is not None:
            timeout = self.patience_s if timeout is None else min(timeout, self.patience_s)
        data = self._inner.read(max_bytes, timeout)
        self.at_end = not data
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _used(self)  # every request begins by writing, also down a connection kept alive
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> HeldSocket:
        return _used(HeldSocket(self._inner.start_tls(ssl_context, server_hostname, timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)

    def claim(self, user: SocketUser) -> None:
        with self._lock:
            if self._user is not user:
                self.requests += 1
            self._user, self.patience_s = user, None

    def wait_at_most(self, user: SocketUser, seconds: float | None) -> None:
        """Cap each read's wait while user holds it (None: the request's own timeout again)."""
        with self._lock:
            if self._user is user:
                self.patience_s = seconds

    def release(self) -> None:
        """Its request is done with it; it goes back to the pool."""
        with self._lock:
            self._user, self.patience_s = None, None

    def shut(self, user: SocketUser) -> None:
        """End the connection now, from any thread, if user still holds it: a read blocked on it returns, and the
        server sees the client go."""
        with self._lock:
            if self._user is not user:
                return
            sock = self._inner.get_extra_info("socket")
            if sock is not None:
                # The plain socket's shutdown, also under TLS: SSLSocket's own would drop its TLS state from under
                # the thread that is reading. OSError: already closed.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _used(network: HeldSocket) -> HeldSocket:
    sender = _sender.get()
    if sender is not None:
        network.claim(sender)
        sender.use(network)
    return network


class _HeldSocketBackend(httpcore.NetworkBackend):
    """httpcore's own sockets, each wrapped in a HeldSocket."""

    def __init__(self) -> None:
        self._sockets = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> HeldSocket:
        return _used(HeldSocket(self._sockets.connect_tcp(host, port, timeout, local_address, socket_options)))

    def sleep(self, seconds: float) -> None:
        self._sockets.sleep(seconds)


class _Transport(httpx.BaseTransport):
    """httpx over an httpcore pool of HeldSockets: httpx.HTTPTransport builds its pool with no way to hand it a
    network backend, so this is its handle_request, minus the options Latency Lab never uses."""

    def __init__(self, pool: httpcore.ConnectionPool):
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        response = self._pool.handle_request(
            httpcore.Request(
                request.method,
                httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                headers=request.headers.raw,
                content=typing.cast(Iterable[bytes], request.stream),
                extensions=request.extensions,
            )
        )
        return httpx.Response(
            response.status, headers=response.headers, stream=_Body(response), extensions=response.extensions
        )

    def close(self) -> None:
        self._pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response):
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        return iter(typing.cast(Iterable[bytes], self._response.stream))

    def close(self) -> None:
        network = self._response.extensions.get("network_stream")
        if isinstance(network, HeldSocket):
            network.release()  # before the pool may hand it to another request
        self._response.close()


class HttpClient:
    """The connections to one server, kept alive between requests (also several at once: the lab's concurrent
    streams), through the proxy the environment names for it; closed with the model that holds it, or when that
    model is dropped."""

    def __init__(self, base_url: str):
        parts = urllib.parse.urlsplit(base_url)
        proxy = environment_proxy(base_url)
        # Certificates are always verified, against the system's trust store: there is deliberately no switch to skip it.
        tls = ssl.create_default_context() if parts.scheme == "https" else None
        options: dict[str, typing.Any] = dict(
            ssl_context=tls,
            max_connections=None,  # the lab's N simultaneous streams each get their own: never queued behind a limit
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
            network_backend=_HeldSocketBackend(),
        )
        pool: httpcore.ConnectionPool
        if proxy is None:
            pool = httpcore.ConnectionPool(**options)
        else:
            pool = httpcore.HTTPProxy(
                httpcore.URL(
                    scheme=proxy.url.raw_scheme, host=proxy.url.raw_host, port=proxy.url.port, target=proxy.url.raw_path
                ),
                proxy_auth=proxy.raw_auth,
                proxy_ssl_context=ssl.create_default_context() if proxy.url.scheme == "https" else None,
                **options,
            )
        self.proxy = _shown(proxy.url) if proxy is not None else None  # as messages name it: never its password
        # Latency Lab reads raw bytes as they come (iter_raw), so it asks for them uncompressed. The proxy is chosen
        # above (httpx skips the environment's once it is handed a transport).
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        self._client = httpx.Client(
            transport=_Transport(pool), headers=headers, follow_redirects=False, trust_env=False
        )
        self._closer = weakref.finalize(self, self._client.close)

    def send(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout_s: float,
        sender: SocketUser,
    ) -> httpx.Response:
        """Send a request and read its status and headers; the body is left to read as it comes. sender.use() hears
        of the socket it goes out on, from this thread, before anything is written."""
        request = self._client.build_request(method, url, content=body, headers=headers, timeout=timeout_s)
        token = _sender.set(sender)
        try:
            return self._client.send(request, stream=True)
        finally:
            _sender.reset(token)

    def close(self) -> None:
        self._closer()


def environment_proxy(url: str) -> httpx.Proxy | None:
    """The proxy the environment names for url's scheme (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY, in either case, as
    urllib and curl read them; on macOS and Windows the system's settings where none is set), or None: none named,
    or NO_PROXY lists url's host."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    address = proxies.get(parts.scheme) or proxies.get("all")
    if not address or urllib.request.proxy_bypass(parts.netloc):
        return None
    if "://" not in address:
        address = "http://" + address  # curl's reading of a bare host:port
    try:
        proxy: httpx.Proxy | None = httpx.Proxy(address)
    except (ValueError, httpx.InvalidURL):
        proxy = None
    if proxy is None or proxy.url.scheme not in ("http", "https") or not proxy.url.host:
        named = urllib.parse.urlsplit(address)
        raise RemoteError(
            f"the proxy the environment names for {parts.scheme}:// URLs ({named.scheme}://{named.hostname or ''}) "
            f"is not an HTTP proxy Latency Lab can use; set HTTPS_PROXY or HTTP_PROXY to http://HOST:PORT, or add "
            f"{parts.hostname} to NO_PROXY."
        )
    return proxy


def _shown(url: httpx.URL) -> str:
    return f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
