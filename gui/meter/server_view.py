"""Client and server timings side by side for a remote reply: what we saw over the wire beside what the server says."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from core.timing.metrics import DEFINITIONS
from core.timing.server_compare import DEFINITIONS as SERVER_DEFINITIONS
from core.timing.server_compare import compare
from core.timing.trace import ReplyTrace

TOOLTIP = "\n".join(
    (
        "Client: stamped by Latency Lab as each chunk arrives, before parsing. Server: the server's own timings, "
        "where it sends them.",
        DEFINITIONS["chunks"],
        DEFINITIONS["ttfb_s"],
        SERVER_DEFINITIONS["prompt_ms"],
        SERVER_DEFINITIONS["per_token_ms"],
        SERVER_DEFINITIONS["ttft_minus_prompt_s"],
    )
)


class ServerView(QLabel):
    """Hidden for local replies; filled once when a remote reply finishes (never per token)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("server_view")
        self.setToolTip(TOOLTIP)
        self.setWordWrap(True)
        self.setVisible(False)

    def show_trace(self, trace: ReplyTrace) -> None:
        if trace.server is None:
            self.setVisible(False)
            return
        self.setText(server_table(trace))
        self.setVisible(True)

    def clear(self) -> None:
        self.setText("")
        self.setVisible(False)


def server_table(trace: ReplyTrace) -> str:
    """The side-by-side table as rich text: rows of (what, client, server)."""
    metrics = trace.metrics()
    timings = (trace.server.timings if trace.server else None) or {}
    source = timings.get("source", "no server timings sent")
    ttfb = (trace.first_byte_ns - trace.request_start_ns) / 1e9 if trace.first_byte_ns else None
    difference = compare(metrics.ttft_s, timings)
    rows = [
        ("TTFT vs prompt time", _ms(metrics.ttft_s), _ms_value(timings.get("prompt_ms"))),
        ("network + queue + templating", _ms(difference["ttft_minus_prompt_s"]) if difference else "–", ""),
        ("TPOT vs per token", _ms(metrics.tpot_s), _ms_value(timings.get("per_token_ms"))),
        ("time to first byte", _ms(ttfb), ""),
        ("tokens (usage) in chunks", f"{trace.output_tokens} in {trace.chunks}", _count(timings.get("generated_n"))),
        ("prompt tokens", str(trace.prompt_tokens), _count(timings.get("prompt_n"))),
    ]
    if timings.get("cache_n") is not None:
        rows.append(("prompt tokens from the server's cache", "", _count(timings["cache_n"])))
    if timings.get("load_ms") is not None:
        rows.append(("model load on the server", "", _ms_value(timings["load_ms"])))
    body = "".join(
        f"<tr><td>{what}</td><td align='right'>{client}</td><td align='right'>{server}</td></tr>"
        for what, client, server in rows
    )
    return (
        f"<table cellspacing='6'><tr><th align='left'>{trace.server.kind if trace.server else 'server'}</th>"
        f"<th>client</th><th>server ({source})</th></tr>{body}</table>"
    )


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:.1f} ms"


def _ms_value(milliseconds: float | None) -> str:
    return "–" if milliseconds is None else f"{milliseconds:.1f} ms"


def _count(value) -> str:
    return "–" if value is None else str(int(value))
