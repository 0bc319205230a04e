"""The finding of a server's TTFT: how much of it the server says it spent on the prompt, in its queue, and the rest
(the network, templating, the server's own overhead)."""

from __future__ import annotations

from core.diagnosis.words import duration, share
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace

# Where the server's prefill is less than this share of the TTFT, most of the wait was elsewhere.
PREFILL_SHARE = 0.5
FELT_S = 0.05


def server_finding(trace: ReplyTrace) -> list[Finding]:
    server = trace.server
    ttft = trace.metrics().ttft_s
    timings = (server.timings or {}) if server else {}
    prompt_ms, queue_ms = timings.get("prompt_ms"), timings.get("queue_ms")
    if ttft is None or prompt_ms is None:
        return []
    prefill, queue = prompt_ms / 1e3, (queue_ms or 0) / 1e3
    rest = max(ttft - prefill - queue, 0.0)
    if prefill >= PREFILL_SHARE * ttft or ttft - prefill < FELT_S:
        return []
    parts = [f"{duration(prefill)} prefill"]
    if queue_ms is not None:
        parts.append(f"{duration(queue)} in its queue")
    said = " and ".join(parts)
    # A server that reports no queue time (llama.cpp, Ollama) leaves its queue inside the rest: not named apart.
    ahead = trace.sharing.others_at_start if trace.sharing else 0
    elsewhere = (
        "the network and templating"
        if queue_ms is not None
        else f"outside its prefill: most likely its queue, as {ahead} other request{'s were' if ahead > 1 else ' was'} "
        "in flight through the proxy when it started"
        if ahead
        else "outside its prefill: its queue, the network or templating (the server does not say which)"
    )
    # Requests already in flight through the proxy when it started put it behind them, where the server has no word.
    queued = queue > rest or (queue_ms is None and ahead > 0)
    waiting = "its queue" if queued else "outside the prompt's pass"
    return [
        Finding(
            kind="server_wait",
            summary=f"Of the {duration(ttft)} TTFT, the server reports {said}; {duration(rest)} was {elsewhere}.",
            cause=f"most of the wait for the first token was {waiting}, not the prompt's pass",
            evidence=f"the server's {timings.get('source', 'timings')}: {said}, against a TTFT of {duration(ttft)}",
            figure=(ttft - prefill) / ttft,
            advice=(
                "the server was busy with other requests: fewer at once, or a server with more slots"
                if queued
                else f"{share(rest / ttft)} of the TTFT was outside the prompt's pass: where other requests share the "
                "server, fewer at once or more slots; else a nearer server"
            ),
            cost_s=ttft - prefill,
        )
    ]
