"""The one answer to "does this prompt fit the context window": a reply budget check and a prompt check."""

from __future__ import annotations

from core.errors import InvalidSettingsError, PromptTooLongError


def check_reply_budget(max_new_tokens: int, context_window: int) -> None:
    """The prompt gets what the reply leaves of the context window; refuse a reply that takes all of it."""
    if context_window < 2:  # a crafted file's context length of 1 (or 0): no setting of ours can help
        raise InvalidSettingsError(
            f"the model's context window holds only {context_window:,} token(s), too few for a prompt and a reply: "
            "the model file's context length is wrong."
        )
    if max_new_tokens >= context_window:
        raise InvalidSettingsError(
            f"max new tokens is {max_new_tokens:,}, but the model's context window holds only {context_window:,} "
            f"tokens for prompt and reply together. Choose fewer than {context_window:,}."
        )


def prompt_budget(max_new_tokens: int, context_window: int) -> int:
    """How many prompt tokens fit once the reply is budgeted (never below 0)."""
    return max(context_window - max_new_tokens, 0)


def fits(prompt_tokens: int, max_new_tokens: int, context_window: int) -> bool:
    return prompt_tokens + max_new_tokens <= context_window


def check_fits(prompt_tokens: int, max_new_tokens: int, context_window: int) -> None:
    """Raise PromptTooLongError when prompt and reply together exceed the context window."""
    if not fits(prompt_tokens, max_new_tokens, context_window):
        raise PromptTooLongError(prompt_tokens, prompt_budget(max_new_tokens, context_window))
