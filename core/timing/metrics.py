"""Latency metrics as pure functions of a request start and token timestamps, defined as in vLLM's benchmark."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

NS_PER_S = 1_000_000_000

DEFINITIONS = {
    "ttft_s": "Time to first token: from request start to the first generated token.",
    "e2e_s": "End-to-end latency: from request start to the last generated token.",
    "tpot_s": "Time per output token: (E2E - TTFT) / (N - 1); undefined when N < 2.",
    "itl_s": "Inter-token latencies: the gaps between consecutive generated tokens (N - 1 values).",
    "itl_p50_s": "Median of the inter-token latencies.",
    "itl_p90_s": "90th percentile of the inter-token latencies (linear interpolation).",
    "itl_p99_s": "99th percentile of the inter-token latencies (linear interpolation).",
    "prefill_tok_s": "Prefill rate: prompt tokens computed / TTFT (less those the prompt cache gave, where it says).",
    "decode_tok_s": "Decode rate: 1 / TPOT.",
    "timestamps": "Each token is stamped with time.perf_counter_ns() inside the streamer's put(), "
    "on the generating thread; the request starts when generation is requested.",
    "chunks": "Over a network a chunk is not a token: N is the server's usage count (completion_tokens, "
    "eval_count), TTFT runs to the first chunk with content (role-only and empty chunks do not count), "
    "and each ITL is a gap between chunks; a chunk's tokens share its arrival stamp.",
    "ttfb_s": "Time to first byte: from request start to the response's status line and headers.",
    "delivery_s": "Delivery: from a token's put() stamp in the engine process to its arrival in the window's "
    "process, on the same monotonic clock (perf_counter_ns, CLOCK_MONOTONIC); p50 and p95 per reply. While tokens "
    "come faster than the window's 25 Hz frames, the window reads them once a frame, so this includes that wait "
    "(up to a frame).",
}


@dataclass(frozen=True)
class LatencySummary:
    """The O(1) part of the metrics: what a live display can afford to recompute every frame."""

    output_tokens: int
    prompt_tokens: int
    ttft_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    prefill_tok_s: float | None
    decode_tok_s: float | None


@dataclass(frozen=True)
class LatencyMetrics(LatencySummary):
    itl_s: tuple[float, ...] = ()
    itl_p50_s: float | None = None
    itl_p90_s: float | None = None
    itl_p99_s: float | None = None

    def to_dict(self) -> dict:
        values = asdict(self)
        values["itl_s"] = list(self.itl_s)
        return values


def summarize(
    request_start_ns: int,
    first_token_ns: int | None,
    last_token_ns: int | None,
    output_tokens: int,
    prompt_tokens: int,
    prefilled_tokens: int | None = None,
) -> LatencySummary:
    """TTFT, E2E, TPOT and rates from the first and last stamps alone.

    N = 0: every latency is None. N = 1: TTFT = E2E, and TPOT and the decode rate are None; so too for N tokens that
    came at one instant, whose prefill rate is None as well. prefilled_tokens: the
    prompt tokens computed, where a prompt cache gave the rest (the prefill rate counts those: a turn whose 173 of
    174 tokens came from the cache read 7,979 tok/s with the whole prompt counted).
    """
    if output_tokens == 0 or first_token_ns is None or last_token_ns is None:
        return LatencySummary(0, prompt_tokens, None, None, None, None, None)
    # Differences in integer nanoseconds, divided once at the end: subtracting float seconds cancels
    # (E2E - TTFT of 15.59 ms + 1 ns came out as 1.0000000012 ns).
    ttft_ns = first_token_ns - request_start_ns
    e2e_ns = last_token_ns - request_start_ns
    ttft = ttft_ns / NS_PER_S
    e2e = e2e_ns / NS_PER_S
    # N tokens that arrived at one instant (a reply not streamed, or one chunk): no pace between them was seen, and the
    # TTFT holds their decode as well as the prompt's pass, so neither rate can be had from it.
    whole = output_tokens > 1 and e2e_ns == ttft_ns
    tpot = (e2e_ns - ttft_ns) / (output_tokens - 1) / NS_PER_S if output_tokens > 1 and not whole else None
    prefilled = prompt_tokens if prefilled_tokens is None else prefilled_tokens
    return LatencySummary(
        output_tokens=output_tokens,
        prompt_tokens=prompt_tokens,
        ttft_s=ttft,
        e2e_s=e2e,
        tpot_s=tpot,
        prefill_tok_s=None if whole else _prefill_rate(prefilled, ttft),
        decode_tok_s=1.0 / tpot if tpot else None,
    )


def _prefill_rate(tokens: int, ttft: float) -> float | None:
    return tokens / ttft if ttft > 0 and tokens else None  # 0: unknown (a server sent no usage), or all cached


def inter_token_latencies(timestamps_ns: Sequence[int]) -> tuple[float, ...]:
    return tuple((later - earlier) / NS_PER_S for earlier, later in zip(timestamps_ns, timestamps_ns[1:]))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile with linear interpolation, as numpy and vLLM's benchmark compute it."""
    return percentiles(values, (q,))[0]


def percentiles(values: Sequence[float], qs: Sequence[float]) -> tuple[float | None, ...]:
    """Each q-th percentile of values (None for none), sorted once; numpy's linear interpolation, its rounding
    included. Plain Python: numpy.percentile's own overhead is 60-90 µs a call (three for a reply's ITL, once per
    request in the proxy), and a sort in Python is faster up to about 5,000 values."""
    if not len(values):
        return tuple(None for _ in qs)
    ordered = sorted(float(value) for value in values)
    last = len(ordered) - 1
    found = []
    for q in qs:
        position = q / 100 * last
        low = math.floor(position)
        below, above = ordered[low], ordered[min(low + 1, last)]
        weight = position - low
        # numpy interpolates from the nearer end, so a percentile between equal values is exactly that value.
        found.append(above - (above - below) * (1 - weight) if weight >= 0.5 else below + (above - below) * weight)
    return tuple(found)


def compute_metrics(
    request_start_ns: int,
    timestamps_ns: Sequence[int],
    prompt_tokens: int,
    *,
    output_tokens: int | None = None,
    itl_stamps_ns: Sequence[int] | None = None,
    prefilled_tokens: int | None = None,
) -> LatencyMetrics:
    """output_tokens: N where it is not one per stamp (a server's usage count); itl_stamps_ns: where the
    gaps are taken (each chunk's arrival over a network, as vLLM's benchmark does)."""
    stamps = list(timestamps_ns)
    count = (output_tokens if output_tokens is not None else len(stamps)) if stamps else 0
    summary = summarize(
        request_start_ns,
        stamps[0] if stamps else None,
        stamps[-1] if stamps else None,
        count,
        prompt_tokens,
        prefilled_tokens,
    )
    itl = inter_token_latencies(stamps if itl_stamps_ns is None else list(itl_stamps_ns))
    p50, p90, p99 = percentiles(itl, (50, 90, 99))
    return LatencyMetrics(**asdict(summary), itl_s=itl, itl_p50_s=p50, itl_p90_s=p90, itl_p99_s=p99)
