"""Findings about the prompt's pass: a prompt cache that could have been reused and was not, and a prompt whose
prefill took most of the reply."""

from __future__ import annotations

from core.diagnosis.words import duration, share
from core.timing.finding import Finding
from core.timing.trace import ReplyTrace

# Statuses of the prompt cache in which a history was there to reuse and some of it was not.
LOST = {
    "broke": "the prompt cache broke",
    "evicted": "the chat's cache was evicted",
    "other": "the cache held another chat",
}
# A prompt whose pass took at least this share of the reply, and long enough to be felt, is what the user waited for.
PREFILL_BOUND_SHARE = 0.5
FELT_PREFILL_S = 0.5
# A cache loss whose prefill took less than this share of the reply is not what made it slow.
CACHE_LOSS_SHARE = 0.2


def prompt_findings(trace: ReplyTrace, prefill_s: float | None) -> list[Finding]:
    """prefill_s: the prompt's pass (core/diagnosis/diagnose.py's prompt_pass_s)."""
    metrics = trace.metrics()
    if metrics.ttft_s is None or not prefill_s:
        return []
    cache = trace.cache
    prefilled = trace.prefilled_tokens
    e2e = metrics.e2e_s or metrics.ttft_s
    if cache is not None and cache.status in LOST and prefilled and prefill_s >= CACHE_LOSS_SHARE * e2e:
        return [
            Finding(
                kind="prompt_cache",
                summary=(
                    f"TTFT {duration(metrics.ttft_s)}: {prefilled:,} of {trace.prompt_tokens:,} prompt tokens were "
                    f"prefilled, because {cache.reason}."
                ),
                cause=f"{LOST[cache.status]}: {cache.reason}",
                evidence=(
                    f"{prefilled:,} of {trace.prompt_tokens:,} prompt tokens prefilled in {duration(prefill_s)}; "
                    f"{cache.cached_tokens or 0:,} came from the cache"
                ),
                figure=float(prefilled),
                advice=(
                    "a chat reuses its history while its earlier messages stay as they were: editing or deleting an "
                    "earlier message, or changing the system prompt, makes the model read everything after it again"
                ),
                cost_s=prefill_s,
            )
        ]
    # A prompt read while the weights came from disk is the disk's finding (core/diagnosis/machine.py), not the
    # prompt's. A server's prefill_s is its own account of the pass, so its queue and the network are not counted.
    read_cold = trace.cpu is not None and bool(trace.cpu.token_major_faults) and trace.cpu.token_major_faults[0] > 0
    if not read_cold and e2e and prefill_s >= FELT_PREFILL_S and prefill_s / e2e >= PREFILL_BOUND_SHARE:
        tokens = prefilled if prefilled is not None else trace.prompt_tokens
        cached = f" ({cache.cached_tokens:,} more came from the cache)" if cache and cache.cached_tokens else ""
        rate = tokens / prefill_s
        # Through the proxy beside other requests, a server's pass over the prompt ran in steps it shared with them:
        # a one-token prompt read 1.08 s there, and "a shorter prompt" was no answer.
        shared = trace.sharing.others_most if trace.sharing else 0
        cause = "the prompt's pass: every prompt token goes through every weight before the first word"
        advice = (
            "a shorter prompt, or a smaller model (prefill's work grows with both); in a chat, later turns reuse the "
            "history from the prompt cache"
        )
        if shared:
            others = f"{shared} other request{'s' if shared > 1 else ''}"
            cause = f"the prompt's pass, in steps the server shared with up to {others}"
            advice = f"fewer requests at once (up to {others} ran beside it); else {advice}"
        return [
            Finding(
                kind="prefill",
                summary=(
                    f"Most of this reply was its prompt: {tokens:,} tokens prefilled in {duration(prefill_s)} "
                    f"({rate:,.0f} tokens/s), {share(prefill_s / e2e)} of its {duration(e2e)}{cached}."
                ),
                cause=cause,
                evidence=(
                    f"{tokens:,} prompt tokens prefilled in {duration(prefill_s)}, {share(prefill_s / e2e)} of the "
                    f"reply"
                ),
                figure=prefill_s / e2e,
                advice=advice,
                cost_s=prefill_s,
            )
        ]
    return []
