"""The proxy's headless output: one line a request for people, or one JSON object a line (JSONL) for programs."""

from __future__ import annotations

import json
import threading
import time
from typing import TextIO

from core.proxy.record import ProxyEvent, ProxyRecord, RequestFinished
from core.terminal_text import terminal_safe


def format_line(record: ProxyRecord) -> str:
    """#id time METHOD path status, then for a generation request: model, client, TTFT, TPOT, E2E, tokens, in flight."""
    clock = time.strftime("%H:%M:%S", time.localtime(record.started_at))
    parts = [f"#{record.id} {clock} {record.method} {record.path} {record.status if record.status else '---'}"]
    if record.model:
        parts.append(record.model)
    if record.client_process:
        parts.append(f"{record.client_process}[{record.client_pid}]")
    elif record.user_agent:
        parts.append(record.user_agent.split()[0][:40])
    if record.api is None:
        parts.append(_span("total", record.total_s))
    else:
        parts += [_span("TTFT", record.ttft_s), _span("TPOT", record.tpot_s), _span("E2E", record.e2e_s)]
        parts.append(tokens_text(record))
        parts.append(f"in flight {record.in_flight_at_start} (max {record.max_in_flight})")
    if record.error:
        parts.append(f"error: {record.error}")
    if record.meter_note:
        parts.append(f"note: {record.meter_note}")
    # The model, the client's name and the server's error are what others sent: shown, never obeyed by a terminal.
    return terminal_safe(" · ".join(part for part in parts if part))


def _span(name: str, seconds: float | None) -> str:
    return f"{name} {span_text(seconds)}"


def span_text(seconds: float | None) -> str:
    """A duration as people read one: ms below a second, else seconds; "-" where not measured."""
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def tokens_text(record: ProxyRecord, unit: bool = True) -> str:
    """Prompt tokens (cached) → output tokens, or chunks where the server sent no count (said whatever `unit` is:
    a table whose column says "Tokens" leaves the word out, to fit)."""
    prompt = "?" if record.prompt_tokens is None else str(record.prompt_tokens)
    if record.cached_tokens:
        prompt += f" ({record.cached_tokens} cached)"
    output = "?" if record.output_tokens is None else str(record.output_tokens)
    named = " chunks" if record.tokens_are_chunks else " tokens" if unit else ""
    return f"{prompt} → {output}{named}"


class RecordWriter:
    """A subscriber that writes each finished request to a stream: a line, or JSONL; flushed at once."""

    def __init__(self, stream: TextIO, *, jsonl: bool):
        self._stream = stream
        self._jsonl = jsonl
        self._lock = threading.Lock()

    def __call__(self, event: ProxyEvent) -> None:
        if not isinstance(event, RequestFinished):
            return
        record = event.record
        text = json.dumps(record.to_dict(), ensure_ascii=False) if self._jsonl else format_line(record)
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()
