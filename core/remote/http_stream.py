"""One HTTP request whose body is read as it arrives, each read stamped with perf_counter_ns() before any parsing."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator

from core.remote.api_key import checked_api_key
from core.remote.errors import (
    RemoteError,
    StreamCut,
    connection_error,
    http_status_error,
    redact,
    redirect_error,
    server_detail,
)

READ_SIZE = 64 * 1024
ERROR_BODY_LIMIT = 64 * 1024
USER_AGENT = "LatencyLab"


class HttpStream:
    """Open with open(); then chunks() yields (arrival_ns, bytes) until the server ends the body.

    abort() from any thread shuts the socket, so a blocked read returns at once and the server sees the
    client go (llama.cpp and vLLM stop generating on that).
    """

    def __init__(
        self,
        url: str,
        *,
        method: str = "POST",
        payload: dict | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ):
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self.where = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
        self._parts = parts
        self._method = method
        self._body = json.dumps(payload).encode() if payload is not None else None
        self._api_key = checked_api_key(api_key)  # a key with a line break in it must never reach a header
        self.timeout_s = timeout_s
        self._connection: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse | None = None
        self._aborted = threading.Event()
        self.request_sent_ns: int | None = None
        self.first_byte_ns: int | None = None  # the response's status line and headers read
        self.status: int | None = None
        self.headers: dict[str, str] = {}

    def open(self) -> HttpStream:
        parts, host = self._parts, self._parts.hostname
        if host is None:  # RemoteSpec.parse refuses such a URL before it gets here
            raise RemoteError(f"{self.url!r} names no host to connect to.")
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            # Certificates are always verified: there is deliberately no switch to skip it.
            connection = http.client.HTTPSConnection(
                host, parts.port, timeout=self.timeout_s, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(host, parts.port, timeout=self.timeout_s)
        self._connection = connection
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json, text/event-stream, application/x-ndjson"}
        if self._body is not None:
            headers["Content-Type"] = "application/json"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            connection.request(self._method, path, body=self._body, headers=headers)
            self.request_sent_ns = time.perf_counter_ns()
            response = connection.getresponse()
            self.first_byte_ns = time.perf_counter_ns()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            if self._aborted.is_set():
                raise StreamCut("stopped before the server answered.") from None
            raise self._wire_error(error) from None
        self._response = response
        self.status = response.status
        self.headers = {key.lower(): value for key, value in response.getheaders()}
        if 300 <= response.status < 400:
            self.close()
            raise redirect_error(self.where, response.status, response.getheader("Location"))
        if response.status >= 400:
            try:
                body = response.read(ERROR_BODY_LIMIT)
            except (OSError, http.client.HTTPException):
                body = b""
            self.close()
            raise http_status_error(
                self.where, response.status, response.reason, redact(server_detail(body), self._api_key)
            )
        return self

    def chunks(self) -> Iterator[tuple[int, bytes]]:
        """The body as it arrives: (perf_counter_ns at the read's return, bytes). Raises StreamCut if cut short."""
        response = self._response
        if response is None:
            raise RuntimeError("open() the stream before reading it")
        while True:
            try:
                data = response.read1(READ_SIZE)
            except (OSError, http.client.HTTPException, ValueError) as error:
                if self._aborted.is_set():
                    return
                if isinstance(error, http.client.IncompleteRead):
                    raise StreamCut(f"{self.where} cut the reply off mid-stream.") from None
                raise self._wire_error(error) from None
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
                from core.remote.errors import ReplyTooLarge

                self.abort()
                raise ReplyTooLarge(f"the server's answer passed {limit // (1024 * 1024)} MiB; it was cut there.")
        return last_ns, bytes(received)

    def abort(self) -> None:
        self._aborted.set()
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    @property
    def aborted(self) -> bool:
        return self._aborted.is_set()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    def _wire_error(self, error: BaseException) -> RemoteError:
        if isinstance(error, http.client.RemoteDisconnected):
            return StreamCut(f"{self.where} closed the connection without answering.")
        if isinstance(error, http.client.HTTPException):
            return RemoteError(f"{self.where} sent something that is not HTTP: {type(error).__name__} {error}.")
        return connection_error(self.where, error, self.timeout_s)


def get_json(url: str, *, api_key: str | None, timeout_s: float, limit: int = 4 * 1024 * 1024) -> object:
    """GET url and parse its JSON body; RemoteError with a clear message otherwise."""
    stream = HttpStream(url, method="GET", api_key=api_key, timeout_s=timeout_s).open()
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
