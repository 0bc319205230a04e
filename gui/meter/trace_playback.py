"""A finished reply's trace played onto a meter: its intervals, what the user saw, and its finish (cards, waterfall,
diagnosis). Used for a saved chat's last reply and for a request the proxy timed."""

from __future__ import annotations

from core.timing.events import TokenEvent
from core.timing.trace import ReplyTrace
from gui.meter.meter_panel import MeterPanel


def play_trace(meter: MeterPanel, trace: ReplyTrace, streaming: bool, shown_chars: list[int] | None = None) -> None:
    """shown_chars: the characters each token brought, where the trace's texts do not hold them (a proxy that kept
    no bodies counts them all the same)."""
    meter.begin_reply(trace.request_start_ns)
    visible = 0
    drafted = set(trace.drafted_indices)
    for index, (token_id, text, stamp) in enumerate(zip(trace.token_ids, trace.token_texts, trace.timestamps_ns)):
        chunk = trace.chunk_of[index] if trace.chunk_of else None
        meter.record_token(TokenEvent(index, token_id, text, stamp, chunk, drafted=index in drafted))
        if streaming:
            # The token's stamp stands in for the moment it was drawn (benchmarks/stamp_to_consumer.py: the gap).
            visible += shown_chars[index] if shown_chars is not None and index < len(shown_chars) else len(text)
            meter.show_visible_text(stamp, visible)
    if trace.timestamps_ns:
        meter.show_visible_text(trace.timestamps_ns[-1], visible if shown_chars is not None else len(trace.text))
    meter.finish_reply(trace, streaming)
