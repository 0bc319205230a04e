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
    # A reply that came whole (not streamed) has its decode inside the TTFT too: the server's generation time.
    generation_ms = timings.get("generation_ms") if len(trace.timestamps_ns) == 1 and trace.output_tokens > 1 else None
    generation = (generation_ms or 0) / 1e3
    work = prefill + generation
    rest = max(ttft - work - queue, 0.0)
    if work >= PREFILL_SHARE * ttft or ttft - work < FELT_S:
        return []
    parts = [f"{duration(prefill)} prefill"]
    if generation_ms is not None:
        parts.append(f"{duration(generation)} writing the reply (it came whole)")
    if queue_ms is not None:
        parts.append(f"{duration(queue)} in its queue")
    said = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    # A server that reports no queue time (llama.cpp, Ollama) leaves its queue inside the rest: not named apart.
    ahead = trace.sharing.others_at_start if trace.sharing else 0
    outside = "outside its prefill" + (" and generation" if generation_ms is not None else "")
    elsewhere = (
        "the network and templating"
        if queue_ms is not None
        else f"{outside}: most likely its queue, as {ahead} other request{'s were' if ahead > 1 else ' was'} "
        "in flight through the proxy when it started"
        if ahead
        else f"{outside}: its queue, the network or templating (the server does not say which)"
    )
    # Requests already in flight through the proxy when it started put it behind them, where the server has no word.
    queued = queue > rest or (queue_ms is None and ahead > 0)
    work_words = "the prompt's pass" if generation_ms is None else "the server's work on it"
    waiting = "its queue" if queued else f"outside {work_words}"
    if queued:
        advice = "the server was busy with other requests: fewer at once, or a server with more slots"
    elif trace.sharing is not None:  # the proxy counted: nothing of its own was ahead of it
        advice = (
            f"{share(rest / ttft)} of the TTFT was outside {work_words}, with no other request through the proxy "
            "ahead of it: the network, templating, or clients that talk to the server directly; else a nearer server"
        )
    else:
        advice = (
            f"{share(rest / ttft)} of the TTFT was outside {work_words}: where other requests share the server, "
            "fewer at once or more slots; else a nearer server"
        )
    return [
        Finding(
            kind="server_wait",
            summary=f"Of the {duration(ttft)} TTFT, the server reports {said}; {duration(rest)} was {elsewhere}.",
            cause=f"most of the wait for the first token was {waiting}, not {work_words}",
            evidence=f"the server's {timings.get('source', 'timings')}: {said}, against a TTFT of {duration(ttft)}",
            figure=(ttft - work) / ttft,
            advice=advice,
            cost_s=ttft - work,
        )
    ]
