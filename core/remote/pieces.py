"""What one message of a server's stream carried, whatever the protocol: text, counts, timings, the end."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Piece:
    text: str = ""
    reasoning: str = ""
    # Tokens this message carries where the server says so (vLLM's continuous usage, logprobs); None: unknown.
    tokens: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    timings: dict | None = None      # the server's own timings, normalised (server_timings.py)
    prefill_fraction: float | None = None  # the server's prompt progress, where it streams it
    done: bool = False

    @property
    def has_content(self) -> bool:
        return bool(self.text or self.reasoning)
