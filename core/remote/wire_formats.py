"""Incremental parsers for the two streaming bodies servers send: server-sent events and newline-delimited JSON."""

from __future__ import annotations

# A single event or line longer than this is not a chat chunk: the stream is treated as malformed
# rather than buffered without end.
MAX_EVENT_BYTES = 4 * 1024 * 1024


class MalformedStream(ValueError):
    """The body does not follow its format; the message says what was seen."""


class ServerSentEvents:
    """Feed bytes as they arrive; get back each complete event's data (its data: lines joined by newlines)."""

    def __init__(self):
        self._pending = b""
        self._data: list[str] = []

    def feed(self, data: bytes) -> list[str]:
        self._pending += data
        events: list[str] = []
        while True:
            end = self._pending.find(b"\n")
            if end < 0:
                break
            line, self._pending = self._pending[:end].rstrip(b"\r"), self._pending[end + 1 :]
            self._take_line(line, events)
        if len(self._pending) > MAX_EVENT_BYTES or sum(map(len, self._data)) > MAX_EVENT_BYTES:
            raise MalformedStream(f"an event passed {MAX_EVENT_BYTES // (1024 * 1024)} MiB without ending")
        return events

    def finish(self) -> list[str]:
        """What a body that ended without a last blank line still completes."""
        events: list[str] = []
        if self._pending:
            self._take_line(self._pending.rstrip(b"\r"), events)
            self._pending = b""
        self._take_line(b"", events)
        return events

    def _take_line(self, line: bytes, events: list[str]) -> None:
        if not line:
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
            return
        if line.startswith(b":"):
            return  # a comment: servers send these to keep the connection alive
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            try:
                self._data.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                raise MalformedStream("an event's data is not UTF-8") from None
        elif field not in (b"event", b"id", b"retry"):
            raise MalformedStream(f"a line that is not server-sent events: {line[:80]!r}")


class JsonLines:
    """Feed bytes as they arrive; get back each complete line (Ollama's native stream is one JSON object per line)."""

    def __init__(self):
        self._pending = b""

    def feed(self, data: bytes) -> list[str]:
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        if len(self._pending) > MAX_EVENT_BYTES:
            raise MalformedStream(f"a line passed {MAX_EVENT_BYTES // (1024 * 1024)} MiB without ending")
        return [self._decode(line) for line in lines if line.strip()]

    def finish(self) -> list[str]:
        rest, self._pending = self._pending, b""
        return [self._decode(rest)] if rest.strip() else []

    @staticmethod
    def _decode(line: bytes) -> str:
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedStream("a line is not UTF-8") from None
