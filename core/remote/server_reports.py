"""What a server said of its prompt cache and its drafts, as the meter's reports: from its own counts, never inferred."""

from __future__ import annotations

from core.timing.events import PromptCacheReport, SpeculationReport


def speculation_report(timings: dict | None) -> SpeculationReport | None:
    """The server's own count of drafts and accepted drafts (llama.cpp's timings.draft_n, draft_n_accepted), where it
    sent them: never inferred. It does not say how many verify passes it made."""
    drafted, accepted = (timings or {}).get("draft_n"), (timings or {}).get("draft_n_accepted")
    if not isinstance(drafted, int) or not isinstance(accepted, int) or not 0 <= accepted <= drafted:
        return None
    return SpeculationReport("server", drafted, accepted, None, "counted by the server (its verify passes unreported)")


def cache_report(
    server_kind: str, prompt_tokens: int | None, cached: int | None, source: str | None
) -> PromptCacheReport:
    """What the server said of its prompt cache; where it said nothing, that is what the report says.

    source: the field the count came in; a count and its field are set together."""
    prompt = prompt_tokens or 0
    if cached is None or source is None:
        return PromptCacheReport(
            prompt, None, f"not reported: {server_kind} sent no count of cached prompt tokens", source="not reported"
        )
    if prompt and cached > prompt:  # a count beyond the prompt is the server's claim, not a fact: kept apart
        return PromptCacheReport(
            prompt,
            None,
            f"not reported: {server_kind} claimed {cached:,} cached tokens of a {prompt:,}-token prompt",
            source=source,
        )
    reason = (
        f"{server_kind} reused {cached:,} cached prompt tokens"
        if cached
        else f"{server_kind} reports no prompt tokens from its cache"
    )
    return PromptCacheReport(prompt, cached, reason, source=source)
