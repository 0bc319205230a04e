"""What an OpenAI-style message says it counted: usage, llama.cpp's timings, vLLM's metrics; read alike by the remote
client and the proxy."""

from __future__ import annotations

from typing import Protocol

from core.remote.server_timings import from_llama_cpp, from_vllm

MAX_COUNT = 2**53  # past this a JSON number is not a whole count a float holds exactly


class Counted(Protocol):
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    cache_source: str | None
    timings: dict | None


def count(value) -> int | None:
    """A count the server sent, or None: not a whole number, negative, or past what a float holds exactly."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None


def read_counts(document: dict, into: Counted) -> None:
    """The message's counts and timings into `into`; what it does not carry is left as it was."""
    usage = document.get("usage")
    if isinstance(usage, dict):
        into.prompt_tokens = count(usage.get("prompt_tokens"))
        into.completion_tokens = count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and count(details.get("cached_tokens")) is not None:
            into.cached_tokens = details["cached_tokens"]  # vLLM, OpenAI, Ollama's /v1, llama.cpp's newer servers
            into.cache_source = "usage.prompt_tokens_details.cached_tokens"
    timings = document.get("timings")  # llama.cpp's server
    if isinstance(timings, dict):
        into.timings = {**(into.timings or {}), **from_llama_cpp(timings)}
        cached = count(timings.get("cache_n"))  # tokens reused from the slot's cache: the server's own word
        if cached is not None:
            into.cached_tokens, into.cache_source = cached, "llama.cpp timings.cache_n"
        computed = count(timings.get("prompt_n"))
        if into.prompt_tokens is None and computed is not None:
            # Without usage (a client that did not ask for it) the prompt is what llama.cpp computed and what its
            # cache gave: the Traffic tab showed "?" for every such request.
            into.prompt_tokens = computed + (cached or 0)
    metrics = document.get("metrics")  # vLLM, where a deployment returns them
    if isinstance(metrics, dict):
        into.timings = {**(into.timings or {}), **from_vllm(metrics)}
