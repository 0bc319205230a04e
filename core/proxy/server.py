"""The proxy's HTTP side: every request forwarded untouched, every chunk of the answer stamped and sent on at once.

aiohttp serves the clients and fetches from the server, on one event loop: its HTTP parser (llhttp, in C) reads
both directions, a handler sees each read of the server's socket as it lands (iter_any), and a client's disconnect
cancels its handler (handler_cancellation), which closes the upstream request so the server stops generating.
Chosen by measurement (benchmarks/proxy_libraries.py, a synthetic SSE server, chunks 4 ms apart, on a busy 2-core
machine): this proxy, metering every chunk, added 0.29 ms p50 per chunk at 1 stream and 0.68 ms at 32; a bare
Starlette + uvicorn + httpx relay that meters nothing added 0.42 ms and 1.26 ms (its ASGI layer and pure-Python h11
on both sides cost more per chunk as streams grow). benchmarks/proxy_overhead.py measures it on llama-server.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor

import aiohttp
from aiohttp import HttpVersion11, web
from multidict import CIMultiDict
from yarl import URL

from core.proxy.client_process import ConnectionOwners, is_local
from core.proxy.exchange import Exchange
from core.proxy.headers import end_to_end
from core.proxy.http_errors import server_logger
from core.proxy.in_flight import InFlight
from core.proxy.meter import ResponseMeter
from core.proxy.record import RequestFinished
from core.proxy.routes import api_of
from core.proxy.subscribers import Subscribers
from core.proxy.upstream import Upstream

# A generation request's body is read whole to learn its model (and forwarded as read); past this it is streamed
# through unread, so an upload of any size passes and memory stays bounded.
MAX_READ_REQUEST_BYTES = 32 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
# Below the 5 s after which llama.cpp's server and uvicorn (vLLM) drop an idle connection (as core/remote does).
KEEPALIVE_EXPIRY_S = 4.0
# On stop, requests still running get this long to end before they are cut.
SHUTDOWN_GRACE_S = 0.5
# Headers the HTTP client would otherwise add: a request arrives upstream with the client's own, or none.
AUTO_HEADERS = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
CLIENT_GONE = "the client went away before the reply ended"
PROXY_STOPPED = "the proxy stopped before the reply ended"


class ProxyServer:
    """Listens, forwards and meters; runs on the event loop that calls start()."""

    def __init__(self, upstream: Upstream, subscribers: Subscribers, *, keep_bodies: bool = False):
        self.upstream = upstream
        self.keep_bodies = keep_bodies
        self._subscribers = subscribers
        self._ids = itertools.count(1)
        self._in_flight = InFlight()
        self._owners = ConnectionOwners()
        # /proc is read off the event loop, one lookup at a time: it never holds up a chunk.
        self._lookups = ThreadPoolExecutor(max_workers=1, thread_name_prefix="latencylab-proxy-owner")
        self._pending: set[asyncio.Future | None] = set()  # lookups that records still wait for
        self._owner_of: weakref.WeakKeyDictionary[asyncio.BaseTransport, asyncio.Future] = weakref.WeakKeyDictionary()
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.ServerRunner | None = None
        self._closing = False
        self.port = 0
        # This proxy's name in the Via header it adds (RFC 9110 7.6.3): a request that arrives carrying it has come
        # back, through an upstream that leads to the proxy itself, and would otherwise go round for ever.
        self._via = f"1.1 latencylab-{secrets.token_hex(6)}"

    async def start(self, host: str, port: int) -> int:
        """Listen on host:port (0: a free port); the port it listens on."""
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_EXPIRY_S),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S),
            auto_decompress=False,  # bodies pass as the server sent them
            trust_env=False,  # the upstream is named outright; an environment's proxy is not between us
            cookie_jar=aiohttp.DummyCookieJar(),  # each client's cookies are its own business
        )
        server = web.Server(self._handle, handler_cancellation=True, access_log=None, logger=server_logger())
        self._runner = web.ServerRunner(server, shutdown_timeout=SHUTDOWN_GRACE_S, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError:
            await self.close()
            raise
        self.port = _bound_port(self._runner, port)
        return self.port

    async def close(self) -> None:
        """Stop listening; requests still running get SHUTDOWN_GRACE_S, then are cut (their server requests closed)."""
        self._closing = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None
        waiting = {future for future in self._pending if future is not None}
        if waiting:
            await asyncio.wait(waiting, timeout=2.0)
            await asyncio.sleep(0)  # their records' callbacks run
        self._lookups.shutdown(wait=True)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        start_ns = time.perf_counter_ns()
        target = self.upstream.target(request.raw_path)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        own = request.transport.get_extra_info("sockname") if request.transport else None
        agent = request.headers.get("User-Agent")
        exchange = Exchange(
            id=next(self._ids),
            method=request.method,
            path=request.raw_path,
            api=api_of(request.method, urllib.parse.urlsplit(target).path),
            user_agent=agent[:200] if agent else None,
            client_address=f"{peer[0]}:{peer[1]}" if peer else None,
            keep_bodies=self.keep_bodies,
            start_ns=start_ns,
        )
        transport = request.transport
        lookups: list[asyncio.Future | None] = []

        def look_up() -> None:
            # Once the first token has passed (or the reply ended): the lookup's thread then never holds the
            # interpreter while a request is forwarded or its first token relayed (measured: +2 ms TTFT otherwise).
            if not lookups:
                lookups.append(self._look_up_owner(transport, peer, own))

        if exchange.api is not None:
            self._in_flight.enter(exchange)
        upstream_response: aiohttp.ClientResponse | None = None
        try:
            if any(self._via in value for value in request.headers.getall("Via", ())):
                exchange.status = 508
                exchange.error = f"the request came back to this proxy: its upstream ({self.upstream}) leads to itself"
                self._subscribers.send(exchange.started())
                return web.Response(status=508, text=f"latencylab proxy: {exchange.error}\n")
            body = await self._request_body(request, exchange)
            self._subscribers.send(exchange.started())
            try:
                upstream_response = await self._send_once_more_if_stale(request, target, body)
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as error:
                exchange.error = _unreachable(self.upstream, error)
                exchange.status = 502
                return web.Response(status=502, text=f"latencylab proxy: {exchange.error}\n")
            return await self._relay(request, upstream_response, exchange, look_up)
        except asyncio.CancelledError:
            # Cancelled once the reply was whole (the client closed its connection after the stream's end): no error.
            if exchange.end_ns is None and not _ended_whole(exchange):
                exchange.error = exchange.error or (PROXY_STOPPED if self._closing else CLIENT_GONE)
            raise
        finally:
            if upstream_response is not None:
                upstream_response.close()  # a no-op when it was read to the end; otherwise the server sees us go
            exchange.end_ns = exchange.end_ns or time.perf_counter_ns()
            self._in_flight.leave(exchange)
            look_up()
            self._finish(exchange, lookups[0])

    def _finish(self, exchange: Exchange, lookup: asyncio.Future | None) -> None:
        """Send the record now, or once the client's process is known (that lookup never holds up the reply)."""

        def send(_=None) -> None:
            self._pending.discard(lookup)
            if lookup is not None and lookup.done() and not lookup.cancelled() and lookup.exception() is None:
                exchange.client = lookup.result()
            self._subscribers.send(RequestFinished(exchange.record()))

        if lookup is None or lookup.done():
            send()
        else:
            self._pending.add(lookup)
            lookup.add_done_callback(send)

    async def _request_body(self, request: web.BaseRequest, exchange: Exchange) -> bytes | AsyncIterator[bytes] | None:
        """A generation request's body, read to learn its model; any other body, streamed through as it comes."""
        if not request.body_exists:
            return None
        if request.version == HttpVersion11 and request.headers.get("Expect", "").lower() == "100-continue":
            # The client waits to be asked for its body; the proxy takes it, and the server is sent it whole.
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0
        if exchange.api is None:
            return _streamed(request.content, b"")
        read = bytearray()
        while len(read) <= MAX_READ_REQUEST_BYTES:
            data = await request.content.readany()
            if not data:
                exchange.read_request(bytes(read))
                return bytes(read)
            read += data
        return _streamed(request.content, bytes(read))

    async def _send_once_more_if_stale(
        self, request: web.BaseRequest, target: str, body: bytes | AsyncIterator[bytes] | None
    ) -> aiohttp.ClientResponse:
        """Sent again, once, where the server closed the connection without a word: a kept-alive connection it had
        already given up (llama.cpp's server closes one after 5 requests or 5 s; seen as a 502 in 1 of 80 requests).
        Only a body the proxy holds whole can be sent again."""
        try:
            return await self._send(request, target, body)
        except aiohttp.ServerDisconnectedError:
            if not isinstance(body, bytes | None):
                raise
            return await self._send(request, target, body)

    async def _send(
        self, request: web.BaseRequest, target: str, body: bytes | AsyncIterator[bytes] | None
    ) -> aiohttp.ClientResponse:
        assert self._session is not None
        # Host is the upstream's; Expect was answered here; a body read whole gets its Content-Length from aiohttp.
        dropped = {"host", "expect"} | ({"content-length"} if isinstance(body, bytes) else set())
        headers = CIMultiDict(end_to_end(request.headers.items(), also_drop=dropped))
        headers.add("Via", self._via)
        return await self._session.request(
            request.method,
            URL(target, encoded=True),
            headers=headers,
            data=body,
            allow_redirects=False,
            skip_auto_headers=[name for name in AUTO_HEADERS if name not in headers],
        )

    async def _relay(
        self,
        request: web.BaseRequest,
        upstream: aiohttp.ClientResponse,
        exchange: Exchange,
        first_token_passed: Callable[[], None],
    ) -> web.StreamResponse:
        exchange.first_byte_ns = time.perf_counter_ns()
        exchange.status = upstream.status
        meter = None
        if exchange.api is not None:
            meter = exchange.meter = ResponseMeter(exchange.api, keep_text=self.keep_bodies)
            meter.begin(
                upstream.status,
                upstream.headers.get("Content-Type", ""),
                upstream.headers.get("Content-Encoding", ""),
                exchange.stream_hint,
            )
        response = web.StreamResponse(
            status=upstream.status, reason=upstream.reason, headers=CIMultiDict(end_to_end(upstream.headers.items()))
        )
        await response.prepare(request)
        try:
            async for data in upstream.content.iter_any():
                stamp = time.perf_counter_ns()
                await response.write(data)  # first: the client's chunk waits for nothing the proxy does
                exchange.bytes_from_server += len(data)
                if meter is not None:
                    meter.feed(data, stamp)
                    progress = exchange.progress(stamp)
                    if progress is not None:
                        self._subscribers.send(progress)
                if meter is None or meter.first_output_ns is not None:
                    first_token_passed()
        except ConnectionError:
            if not _ended_whole(exchange):
                exchange.error = CLIENT_GONE  # writing to a client that left
            return response
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            exchange.error = f"the server cut the reply short ({_said(error)})"
            if request.transport is not None:
                request.transport.close()  # so the client sees the cut too, not a reply that ended well
            return response
        exchange.end_ns = time.perf_counter_ns()
        if meter is not None:
            meter.finish(exchange.end_ns)
        await response.write_eof()
        return response

    def _look_up_owner(self, transport, peer, own) -> asyncio.Future | None:
        """The process behind a connection, looked up once per connection (a kept-alive one carries many requests)."""
        if transport is None or not peer or not own or not is_local(str(peer[0]), str(own[0])):
            return None
        known = self._owner_of.get(transport)
        if known is not None:
            return known
        client, server = (str(peer[0]), int(peer[1])), (str(own[0]), int(own[1]))
        lookup = asyncio.get_running_loop().run_in_executor(self._lookups, self._owners.owner, client, server)
        self._owner_of[transport] = lookup
        return lookup


def _ended_whole(exchange: Exchange) -> bool:
    """Whether the stream had sent its own end before the client left; if so, the exchange is closed as whole."""
    meter = exchange.meter
    if meter is None or meter.ended_ns is None:
        return False
    if exchange.end_ns is None:
        exchange.end_ns = meter.ended_ns
        meter.finish(meter.ended_ns)
    return True


async def _streamed(content: aiohttp.StreamReader, already: bytes) -> AsyncIterator[bytes]:
    if already:
        yield already
    async for data in content.iter_any():
        yield data


def _bound_port(runner: web.ServerRunner, asked: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked


def _unreachable(upstream: Upstream, error: BaseException) -> str:
    """One line on why the server could not be asked."""
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"the server at {upstream.origin} could not be reached ({_said(error.os_error)})"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return f"the server at {upstream.origin} closed the connection without answering"
    if isinstance(error, asyncio.TimeoutError):
        return f"the server at {upstream.origin} did not accept a connection within {CONNECT_TIMEOUT_S:g} s"
    return f"the server at {upstream.origin} could not be asked ({_said(error)})"


def _said(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:200]
