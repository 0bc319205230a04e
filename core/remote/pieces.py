"""What one message of a server's stream carried, whatever the protocol: text, counts, timings, the end."""

from __future__ import annotations

import json
from dataclasses import dataclass

from core.remote.errors import RemoteError


@dataclass
class Piece:
    text: str = ""
    reasoning: str = ""
    # Tokens this message carries where the server says so (vLLM's continuous usage, logprobs); None: unknown.
    tokens: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    timings: dict | None = None  # the server's own timings, normalised (server_timings.py)
    # Prompt tokens the server took from its own prompt cache, and the field that said so; None: not reported.
    cached_tokens: int | None = None
    cache_source: str | None = None
    prefill_fraction: float | None = None  # the server's prompt progress, where it streams it
    done: bool = False

    @property
    def has_content(self) -> bool:
        return bool(self.text or self.reasoning)


def json_object(text: str, sender: str, what: str) -> dict:
    """Parse one message of a stream as a JSON object, or RemoteError naming who sent what."""
    try:
        document = json.loads(text)
    except ValueError:
        raise RemoteError(f"{sender} sent a {what} that is not JSON: {text[:120]!r}") from None
    except RecursionError:  # json's parser recurses once per level: a chunk of 100,000 "[" ended in Python's words
        raise RemoteError(f"{sender} sent a {what} nested too deeply to read: {text[:40]!r}…") from None
    if not isinstance(document, dict):
        raise RemoteError(f"{sender} sent a {what} that is not a JSON object: {text[:120]!r}")
    return document
