"""Replies made to order for the diagnosis's rules: a first token after ttft_ms, then one token per interval."""

from __future__ import annotations

from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PromptCacheReport,
    ServerReport,
    StopReason,
    TokenEvent,
)
from core.timing.trace import ReplyTrace

MS = 1_000_000


def made_trace(
    intervals_ms: list[float],
    ttft_ms: float = 50.0,
    prompt_tokens: int = 40,
    cache: PromptCacheReport | None = None,
    cpu: CpuUsage | None = None,
    drafted: set[int] = frozenset(),
    server: ServerReport | None = None,
) -> ReplyTrace:
    """A reply: its first token ttft_ms after the request, then one token per interval."""
    trace = ReplyTrace(request_start_ns=0, prompt_tokens=prompt_tokens)
    trace.record(ComputeStarted(1 * MS))
    if cache is not None:
        trace.record(cache)
    stamp = int(ttft_ms * MS)
    stamps = [stamp]
    for interval in intervals_ms:
        stamp += int(interval * MS)
        stamps.append(stamp)
    for index, stamp in enumerate(stamps):
        trace.record(TokenEvent(index, 7, "x", stamp, drafted=index in drafted))
    if server is not None:
        trace.record(server)
    trace.record(cpu or quiet_cpu(len(stamps), stamps[-1] / 1e9))
    trace.record(FinishedEvent(StopReason.MAX_TOKENS, len(stamps), stamps[-1] + MS))
    return trace


def quiet_cpu(tokens: int, wall_s: float) -> CpuUsage:
    """The engine alone on its cores: nearly all of threads x wall, a preemption or two a token, no faults."""
    return CpuUsage(2 * wall_s * 0.97, wall_s, 2, 0, 100, tokens, [0] * tokens, [1] * tokens, [], 0)
