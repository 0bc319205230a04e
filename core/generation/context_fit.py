"""Settings that only fail against a particular model: a reply budget that leaves no room for any prompt."""

from __future__ import annotations

from core.errors import InvalidSettingsError


def check_reply_budget(max_new_tokens: int, context_window: int) -> None:
    """The prompt gets what the reply leaves of the context window; refuse a reply that takes all of it."""
    if max_new_tokens >= context_window:
        raise InvalidSettingsError(
            f"max new tokens is {max_new_tokens:,}, but the model's context window holds only {context_window:,} "
            f"tokens for prompt and reply together. Choose fewer than {context_window:,}."
        )
