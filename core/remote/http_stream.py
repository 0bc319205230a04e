"""One HTTP request whose body is read as it arrives, each read stamped with perf_counter_ns() before any parsing."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator

import httpcore
import httpx

from core.remote.api_key import checked_api_key
from core.remote.errors import (
    RemoteError,
    ReplyTooLarge,
    StreamCut,
    connection_error,
    http_status_error,
    redact,
    redirect_error,
    server_detail,
)
from core.remote.http_client import HeldSocket, HttpClient

ERROR_BODY_LIMIT = 64 * 1024
# A finished reply's last bytes (the chunked body's end, after [DONE]) are read so its connection can serve the next
# request; at most this much, waiting at most this long, else the connection is ended instead.
END_LIMIT = 64 * 1024
END_WAIT_S = 0.5
# What reading from a server can raise: httpcore's errors (its OSError underneath), httpx's, and the ValueError of a
# TLS socket read after another thread shut it.
_WIRE_ERRORS = (
    OSError,
    ValueError,
    httpx.HTTPError,
    httpx.InvalidURL,
    httpcore.NetworkError,
    httpcore.TimeoutException,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)


class HttpStream:
    """Open with open(); then chunks() yields (arrival_ns, bytes) until the server ends the body.

    abort() from any thread shuts the socket, also before the server has answered, so a blocked read returns at once
    and the server sees the client go (llama.cpp and vLLM stop generating on that).
    """

    def __init__(
        self,
        client: HttpClient,
        url: str,
        *,
        method: str = "POST",
        payload: dict | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ):
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self._server = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
        self.where = self._server + (f" (through the proxy {client.proxy})" if client.proxy is not None else "")
        self._client = client
        self._method = method
        self._body = json.dumps(payload).encode() if payload is not None else None
        self._api_key = checked_api_key(api_key)  # a key with a line break in it must never reach a header
        self.timeout_s = timeout_s
        self._response: httpx.Response | None = None
        self._raw: Iterator[bytes] | None = None
        self._network: HeldSocket | None = None  # the socket the request went out on, once known
        self._aborted = threading.Event()
        self.first_byte_ns: int | None = None  # the response's status line and headers read
        self.status: int | None = None
        self.headers: dict[str, str] = {}

    def open(self) -> HttpStream:
        headers = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
        if self._body is not None:
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            response = self._send(headers)
        except _WIRE_ERRORS as error:  # httpcore has closed the connection
            if self._aborted.is_set():
                raise StreamCut("stopped before the server answered.") from None
            if not self._dropped_while_kept_alive(error):
                raise self._wire_error(error, answered=False) from None
            # Nothing reached the server: once more, on a new connection.
            try:
                response = self._send(headers)
            except _WIRE_ERRORS as again:
                if self._aborted.is_set():
                    raise StreamCut("stopped before the server answered.") from None
                raise self._wire_error(again, answered=False) from None
        self.first_byte_ns = time.perf_counter_ns()
        self._response = response
        self.status = response.status_code
        self.headers = dict(response.headers.items())  # httpx gives the names in lower case
        if 300 <= response.status_code < 400:
            self.close()
            raise redirect_error(self.where, response.status_code, response.headers.get("location"))
        if response.status_code >= 400:
            self._raw = response.iter_raw()
            body = bytearray()
            try:
                for data in self._raw:
                    body += data
                    if len(body) >= ERROR_BODY_LIMIT:
                        break
            except _WIRE_ERRORS:
                pass  # the status says enough
            self.close()
            raise http_status_error(
                self.where,
                response.status_code,
                response.reason_phrase,
                redact(server_detail(bytes(body[:ERROR_BODY_LIMIT])), self._api_key),
            )
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            self.close()
            raise RemoteError(
                f"{self.where} sent its answer compressed ({encoding[:40]}) though asked for it uncompressed; "
                "Latency Lab stamps bytes as they arrive and reads them uncompressed only."
            )
        self._raw = response.iter_raw()
        return self

    def _send(self, headers: dict[str, str]) -> httpx.Response:
        return self._client.send(
            self._method, self.url, body=self._body, headers=headers, timeout_s=self.timeout_s, sender=self
        )

    def _dropped_while_kept_alive(self, error: BaseException) -> bool:
        """Whether the server closed a kept-alive connection as this request went down it, before answering: a server
        may close one without saying so (llama.cpp's does after a streamed reply), and a request sent in that moment
        meets the close. Never for a new connection, where the close is the server's answer."""
        network = self._network
        if network is None or network.requests < 2:
            return False
        if isinstance(error, httpcore.RemoteProtocolError):
            return network.at_end
        return isinstance(_os_error(error), (ConnectionResetError, BrokenPipeError))

    def chunks(self) -> Iterator[tuple[int, bytes]]:
        """The body as it arrives: (perf_counter_ns at the read's return, bytes). Raises StreamCut if cut short.

        A read returns one HTTP chunk's bytes (or as many as one socket read brought, at most 64 KiB: httpcore's
        HTTP11Connection.READ_NUM_BYTES), as http.client's read1 did."""
        raw = self._raw
        if raw is None:
            raise RuntimeError("open() the stream before reading it")
        while True:
            try:
                data = next(raw, b"")
            except _WIRE_ERRORS as error:
                if self._aborted.is_set():
                    return
                raise self._wire_error(error, answered=True) from None
            arrival_ns = time.perf_counter_ns()
            if not data:
                return
            yield arrival_ns, data

    def read_all(self, limit: int) -> tuple[int, bytes]:
        """The whole body (for replies that are not streamed), and when its last byte came; capped at limit."""
        received = bytearray()
        last_ns = self.first_byte_ns or time.perf_counter_ns()
        for arrival_ns, data in self.chunks():
            received += data
            last_ns = arrival_ns
            if len(received) > limit:
                self.abort()
                raise ReplyTooLarge(f"the server's answer passed {limit // (1024 * 1024)} MiB; it was cut there.")
        return last_ns, bytes(received)

    def use(self, network: HeldSocket) -> None:
        """The socket the request goes out on (HttpClient calls this from the request's thread)."""
        self._network = network
        if self._aborted.is_set():  # an abort that came before the socket was known
            network.shut(self)

    def abort(self) -> None:
        self._aborted.set()
        network = self._network
        if network is not None:
            network.shut(self)  # a no-op once the connection has gone back to the pool

    @property
    def aborted(self) -> bool:
        return self._aborted.is_set()

    def close(self, *, keep_alive: bool = False) -> None:
        """Done with the response. keep_alive: the reply is finished, so its body's last bytes are read (briefly) and
        the connection goes back to the model's pool for the next request; otherwise, or if they do not come, the
        connection is ended."""
        response, self._response = self._response, None
        if response is None:
            return
        if keep_alive:
            self._read_to_end()
        response.close()

    def _read_to_end(self) -> None:
        raw, network = self._raw, self._network
        if raw is None or network is None or self._aborted.is_set():
            return
        network.wait_at_most(self, END_WAIT_S)
        started, left = time.monotonic(), END_LIMIT
        try:
            for data in raw:
                left -= len(data)
                if left < 0 or time.monotonic() - started > END_WAIT_S:
                    return  # still talking after it said it was done: the connection is ended
        except _WIRE_ERRORS:
            pass  # the connection is ended instead
        finally:
            network.wait_at_most(self, None)

    def _wire_error(self, error: BaseException, *, answered: bool) -> RemoteError:
        network = self._network
        closed = network is not None and network.at_end
        if isinstance(error, httpcore.ProxyError):
            return RemoteError(
                f"the proxy {self._client.proxy} would not open a connection to {self._server} ({error}); "
                "check HTTPS_PROXY, or add the server's host to NO_PROXY to reach it directly."
            )
        if isinstance(error, httpcore.RemoteProtocolError) and closed:
            if answered:
                return StreamCut(f"{self.where} cut the reply off mid-stream.")
            return StreamCut(f"{self.where} closed the connection without answering.")
        if isinstance(error, httpcore.RemoteProtocolError):
            return RemoteError(f"{self.where} sent something that is not HTTP: {error}.")
        underneath = _os_error(error)
        if underneath is not None:
            return connection_error(self.where, underneath, self.timeout_s)
        return RemoteError(f"could not reach {self.where}: {type(error).__name__} {error}.")


def _os_error(error: BaseException) -> OSError | None:
    """The OSError an error stands for: itself, or the one httpcore raised it from (its pool re-raises "from None",
    so the OSError is left as the context only); a timeout where none is left."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__cause__ or cause.__context__
    if cause is None and isinstance(error, httpcore.TimeoutException):
        return TimeoutError(str(error))
    return cause


def get_json(
    client: HttpClient, url: str, *, api_key: str | None, timeout_s: float, limit: int = 4 * 1024 * 1024
) -> object:
    """GET url and parse its JSON body; RemoteError with a clear message otherwise."""
    stream = HttpStream(client, url, method="GET", api_key=api_key, timeout_s=timeout_s).open()
    try:
        _, body = stream.read_all(limit)
    finally:
        stream.close()
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise RemoteError(
            f"{stream.where} answered {url} with something that is not JSON: "
            f"{redact(body[:120].decode('utf-8', 'replace'), api_key)!r}"
        ) from None
