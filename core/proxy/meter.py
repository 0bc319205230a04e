"""One response read as it passes through: output chunks stamped on arrival, the server's counts and timings.

Memory stays bounded whatever the server sends: inter-chunk gaps are kept for the first ITL_KEPT chunks (after that
only their count, sum and maximum), a whole body is read for its counts up to MAX_WHOLE_BYTES, kept text up to
MAX_KEPT_CHARS, and an SSE event or NDJSON line up to core.remote.wire_formats.MAX_EVENT_BYTES. Whatever the server
sends, feed() never raises: what cannot be read is named in `problem`, and the bytes pass through all the same.
"""

from __future__ import annotations

from array import array

from core.proxy.reading import Reading, read_message
from core.remote.wire_formats import JsonLines, MalformedStream, ServerSentEvents

ITL_KEPT = 8192  # 64 KiB of gaps a request at most; an endless stream keeps counting past them
MAX_WHOLE_BYTES = 4 * 1024 * 1024
MAX_KEPT_CHARS = 1024 * 1024

SSE, LINES, WHOLE = "sse", "ndjson", "whole"


class Gaps:
    """Gaps between chunk arrivals in ns: the first ITL_KEPT of them, and the count, sum and maximum of all."""

    def __init__(self) -> None:
        self.kept = array("q")
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

    def add(self, gap_ns: int) -> None:
        self.count += 1
        self.total_ns += gap_ns
        self.max_ns = max(self.max_ns, gap_ns)
        if len(self.kept) < ITL_KEPT:
            self.kept.append(gap_ns)


def framing_of(content_type: str, streamed_hint: bool) -> str:
    """How a body is framed, by its Content-Type; by what the request asked for where the type says nothing."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        return SSE
    if kind in ("application/x-ndjson", "application/ndjson", "application/jsonl", "application/json-lines"):
        return LINES
    if kind == "application/json" or kind.endswith("+json"):
        return WHOLE
    return LINES if streamed_hint else WHOLE  # no type, or text/plain: what the request asked for


class ResponseMeter:
    """Feed it the body's bytes with their arrival stamps; read the figures when it is finished."""

    def __init__(self, api: str, *, keep_text: bool = False):
        self.api = api
        self.keep_text = keep_text
        self.framing: str | None = None
        self.ok = True  # a 2xx: read for output; otherwise only for the server's error message
        self.first_output_ns: int | None = None
        self.last_output_ns: int | None = None
        self.output_chunks = 0
        self.gaps = Gaps()
        self.chunk_chars = array("q")  # characters of output in each of the first ITL_KEPT + 1 chunks
        self.model: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.cache_source: str | None = None
        self.timings: dict = {}
        self.finish_reason: str | None = None
        self.server_error: str | None = None
        self.problem: str | None = None  # the first thing that could not be read; reading stops there
        # When the stream's own end arrived (SSE's [DONE], Ollama's done: true): a client may close at once after it,
        # before the server's last bytes (the chunked terminator) pass, and its reply was whole all the same.
        self.ended_ns: int | None = None
        self._text: list[str] = []
        self._text_chars = 0
        self._parser: ServerSentEvents | JsonLines | None = None
        self._whole = bytearray()

    def begin(self, status: int, content_type: str, content_encoding: str, streamed_hint: bool) -> None:
        self.ok = 200 <= status < 300
        self.framing = framing_of(content_type, streamed_hint) if self.ok else WHOLE
        if content_encoding.strip().lower() not in ("", "identity"):
            self._stop(f"the body is {content_encoding}-encoded: passed through, not read")
        elif self.framing == SSE:
            self._parser = ServerSentEvents()
        elif self.framing == LINES:
            self._parser = JsonLines()

    @property
    def streamed(self) -> bool:
        return self.framing in (SSE, LINES)

    @property
    def text(self) -> str:
        return "".join(self._text)

    def feed(self, data: bytes, stamp_ns: int) -> None:
        if self.problem is not None or self.framing is None:
            return
        if self.framing == WHOLE:
            if len(self._whole) + len(data) > MAX_WHOLE_BYTES:
                self._stop(f"a whole body over {MAX_WHOLE_BYTES // (1024 * 1024)} MiB: passed through, not read")
                self._whole = bytearray()
            else:
                self._whole += data
            return
        assert self._parser is not None
        try:
            messages = self._parser.feed(data)
        except MalformedStream as error:
            self._stop(f"the stream could not be read: {error}")
            return
        self._take(messages, stamp_ns)

    def finish(self, stamp_ns: int) -> None:
        if self.problem is not None or self.framing is None:
            return
        if self.framing == WHOLE:
            body, self._whole = bytes(self._whole), bytearray()
            if self.ok:
                self._take([body] if body.strip() else [], stamp_ns)
            elif body.strip():
                self._take_error_body(body)
            return
        assert self._parser is not None
        try:
            self._take(self._parser.finish(), stamp_ns)
        except MalformedStream as error:
            self._stop(f"the stream could not be read: {error}")

    def _take(self, messages: list, stamp_ns: int) -> None:
        for message in messages:
            if self.framing == SSE and message.strip() == "[DONE]":
                self.ended_ns = stamp_ns
                continue
            reading = read_message(self.api, message)
            if reading.problem is not None:
                self._stop(f"the server sent {reading.problem}")
                return
            self._note(reading, stamp_ns)
            if reading.done:
                self.ended_ns = stamp_ns

    def _note(self, reading: Reading, stamp_ns: int) -> None:
        if reading.has_output:
            if self.last_output_ns is not None:
                self.gaps.add(stamp_ns - self.last_output_ns)
            else:
                self.first_output_ns = stamp_ns
            self.last_output_ns = stamp_ns
            self.output_chunks += 1
            if len(self.chunk_chars) <= ITL_KEPT:
                self.chunk_chars.append(len(reading.text))
            if self.keep_text and self._text_chars < MAX_KEPT_CHARS:
                piece = reading.text[: MAX_KEPT_CHARS - self._text_chars]
                self._text.append(piece)
                self._text_chars += len(piece)
        self.model = self.model or reading.model
        for name in ("prompt_tokens", "completion_tokens", "finish_reason"):
            value = getattr(reading, name)
            if value is not None:
                setattr(self, name, value)  # the latest wins: vLLM's continuous usage counts up
        if reading.cached_tokens is not None:  # a count and the field it came in, together
            self.cached_tokens, self.cache_source = reading.cached_tokens, reading.cache_source
        if reading.timings:
            self.timings = {**self.timings, **reading.timings}
        if reading.error and self.server_error is None:
            self.server_error = reading.error

    def _take_error_body(self, body: bytes) -> None:
        reading = read_message(self.api, body)
        if reading.error:
            self.server_error = reading.error
        else:
            first_line = body.decode("utf-8", "replace").strip().splitlines()[0] if body.strip() else ""
            self.server_error = " ".join(first_line.split())[:300] or None

    def _stop(self, problem: str) -> None:
        self.problem = problem
        self._parser = None
