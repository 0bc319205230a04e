"""Where one reply's time went: its stamps on one monotonic clock, turned into named segments that add up to the TTFT."""

from __future__ import annotations

from dataclasses import dataclass

from core.timing.metrics import percentile
from core.timing.trace import ReplyTrace

# Each segment's definition: shown in the meter's tooltips and written into exports.
SEGMENT_DEFINITIONS = {
    "prepare": "Request to prompt ready: from the click or Enter (request start) to the engine having built "
    "the chat template and tokenised the prompt (includes handing the request to the engine).",
    "queue": "Wait for the compute thread: from the prompt ready to the reply's job starting on the engine's "
    "compute thread (non-zero when a load or another reply was still running there).",
    "cache": "Prompt cache: from the job's start to the cached part of the prompt being in place (the chat's "
    "earlier turns, reused rather than computed: a lookup, plus a copy back in when the chat had been set "
    "aside). About 0 ms for any number of cached tokens.",
    "prefill": "Prefill: from the job's start (or the cached part in place) to the first token's put() stamp (the "
    "forward pass over the prompt tokens not cached, then sampling token 0). The segments up to here add "
    "up to the TTFT.",
    "send": "Over a network: from the click or Enter (request start) to the engine starting the server's "
    "request (handing the request to the engine, building the chat's JSON).",
    "server_first_byte": "Over a network: from the request leaving to the response's status line and headers (the "
    "network both ways and the server's queue; some servers send headers only after prefill).",
    "server_first_chunk": "Over a network: from the response's headers to the first chunk with content (the "
    "server's prefill and first token, when it sends headers at once).",
    "delivery": "Delivery of token 0: from its put() stamp in the engine to its arrival in the window's process "
    "(read at once: the first token never waits for a frame).",
    "paint": "Paint of token 0: from its arrival in the window to the transcript's next paint after its text was "
    "inserted (streaming only; applied once per 25 Hz frame).",
    "stop_to_last_token": "Stop to last token: from the Stop press to the last token stamped after it.",
    "cancel": "Cancel latency: from the Stop press to the engine's finish stamp (its FinishedEvent): the engine is "
    "idle again.",
}
# The segments before the first token, in order; they tile [request start, first token].
BEFORE_FIRST_TOKEN = ("prepare", "queue", "cache", "prefill")
# Over a network the first byte splits the wait: the server's queue and network, then its prefill.
REMOTE_BEFORE_FIRST_TOKEN = ("send", "server_first_byte", "server_first_chunk")
DECODE_DEFINITIONS = {
    "delivery_p50_s": "Median over the reply's tokens of arrival in the window − put() stamp.",
    "delivery_p95_s": "95th percentile of arrival in the window − put() stamp (linear interpolation).",
    "paint_p50_s": "Median over painted tokens of first paint showing the token − its arrival in the window.",
    "paint_p95_s": "95th percentile of first paint − arrival (linear interpolation).",
    "e2e_s": "End-to-end latency: from request start to the last generated token.",
}


@dataclass(frozen=True)
class Segment:
    """One span of the waterfall, in seconds since request start."""

    name: str
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def definition(self) -> str:
        return SEGMENT_DEFINITIONS[self.name]

    def to_dict(self) -> dict:
        return {"name": self.name, "start_s": self.start_s, "end_s": self.end_s, "duration_s": self.duration_s}


def segments(trace: ReplyTrace) -> list[Segment]:
    """The reply's segments in order; a stamp that was not recorded merges its two neighbours.

    Before the first token the boundaries are clamped to be non-decreasing, so the first three segments
    always tile request start to the first token's stamp exactly: their durations add up to the TTFT.
    """
    start = trace.request_start_ns
    seconds = lambda stamp: (stamp - start) / 1e9  # noqa: E731 - one line, used below only
    found: list[Segment] = []
    if trace.timestamps_ns:
        first = trace.timestamps_ns[0]
        boundaries = [start]
        names = []
        remote = trace.first_byte_ns is not None
        stamped = (
            ("send" if remote else "prepare", trace.prompt_ready_ns),
            ("queue", trace.compute_started_ns),
            ("cache", trace.cache.timestamp_ns if trace.cache else None),
            ("server_first_byte", trace.first_byte_ns),
        )
        for name, stamp in stamped:
            if stamp is not None:
                names.append(name)
                boundaries.append(min(max(stamp, boundaries[-1]), first))
        names.append("server_first_chunk" if remote else "prefill")
        boundaries.append(first)
        found += [Segment(name, seconds(a), seconds(b)) for name, a, b in zip(names, boundaries, boundaries[1:])]
        if trace.arrivals_ns:
            arrival = trace.arrivals_ns[0]
            found.append(Segment("delivery", seconds(first), seconds(arrival)))
            if trace.painted_ns:
                found.append(Segment("paint", seconds(arrival), seconds(trace.painted_ns[0])))
    stop = trace.stop_requested_ns
    if stop is not None:
        after = [stamp for stamp in trace.timestamps_ns if stamp >= stop]
        if after:
            found.append(Segment("stop_to_last_token", seconds(stop), seconds(after[-1])))
        if trace.finished_ns is not None:
            found.append(Segment("cancel", seconds(stop), seconds(max(trace.finished_ns, stop))))
    return found


def decode_figures(trace: ReplyTrace) -> dict:
    """Per-token delivery and paint delays (p50, p95) and the E2E; None where not recorded."""
    delivery = trace.delivery_delays_s()
    paint = [(painted - arrival) / 1e9 for painted, arrival in zip(trace.painted_ns, trace.arrivals_ns)]
    stamps = trace.timestamps_ns
    return {
        "delivery_p50_s": percentile(delivery, 50) if delivery else None,
        "delivery_p95_s": percentile(delivery, 95) if delivery else None,
        "paint_p50_s": percentile(paint, 50) if paint else None,
        "paint_p95_s": percentile(paint, 95) if paint else None,
        "e2e_s": (stamps[-1] - trace.request_start_ns) / 1e9 if stamps else None,
    }


def waterfall_document(trace: ReplyTrace) -> dict:
    """What exports carry: the segments and the decode figures."""
    return {"segments": [segment.to_dict() for segment in segments(trace)], **decode_figures(trace)}


def definitions() -> dict:
    return {
        **{f"waterfall.{name}": text for name, text in SEGMENT_DEFINITIONS.items()},
        **{f"waterfall.{name}": text for name, text in DECODE_DEFINITIONS.items()},
    }
