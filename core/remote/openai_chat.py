"""OpenAI chat completions: the request body, and reading each SSE event or a whole response into Pieces."""

from __future__ import annotations

from core.remote.counts import read_counts
from core.remote.errors import RemoteError
from core.remote.pieces import Piece, json_object


def request_body(
    model: str,
    messages: list[dict],
    *,
    stream: bool,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    server_kind: str,
    ignore_eos: bool = False,
) -> dict:
    body: dict = {
        "model": model,
        "messages": messages,
        "stream": stream,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p,
    }
    if seed is not None:
        body["seed"] = seed
    if stream:
        # Usage is the only honest token count over the wire: a chunk is not a token.
        body["stream_options"] = {"include_usage": True}
        if server_kind == "vLLM":
            body["stream_options"]["continuous_usage_stats"] = True  # a running count in every chunk
    if server_kind == "llama.cpp":
        body["return_progress"] = stream  # prompt_progress chunks during the prompt's pass
        body["timings_per_token"] = False
    if ignore_eos:
        # Exactly max_tokens, so lab runs compare equal lengths: each server has its own word for it.
        if server_kind in ("llama.cpp", "vLLM"):
            body["ignore_eos"] = True
        if server_kind in ("llama-cpp-python", "vLLM"):
            body["min_tokens"] = max_tokens
    return body


def read_event(data: str) -> Piece:
    """One SSE event's data: a chunk, an error, or [DONE]."""
    if data.strip() == "[DONE]":
        return Piece(done=True)
    document = _json(data)
    _raise_on_error(document)
    piece = Piece()
    choices = document.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    delta = choice.get("delta") or {}
    if isinstance(delta, dict):
        piece.text = _text(delta.get("content"))
        piece.reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list) and logprobs["content"]:
        piece.tokens = len(logprobs["content"])  # one entry per token: the chunk's exact count
    piece.finish_reason = choice.get("finish_reason")
    read_counts(document, piece)
    progress = document.get("prompt_progress")
    if isinstance(progress, dict):
        piece.prefill_fraction = _prefill_fraction(progress)
    return piece


def read_response(body: bytes) -> Piece:
    """A whole non-streamed response."""
    document = _json(body.decode("utf-8", "replace"))
    _raise_on_error(document)
    choices = document.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    piece = Piece(
        text=_text(message.get("content")),
        reasoning=_text(message.get("reasoning_content")) or _text(message.get("reasoning")),
        finish_reason=choice.get("finish_reason"),
        done=True,
    )
    read_counts(document, piece)
    return piece


def _prefill_fraction(progress: dict) -> float | None:
    total, cache, processed = (progress.get(key) for key in ("total", "cache", "processed"))
    if not isinstance(total, (int, float)) or not isinstance(processed, (int, float)):
        return None
    cache = cache if isinstance(cache, (int, float)) else 0
    work = total - cache
    return min(1.0, max(0.0, (processed - cache) / work)) if work > 0 else 1.0


def _json(text: str) -> dict:
    return json_object(text, "the server", "chunk")


def _raise_on_error(document: dict) -> None:
    error = document.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise RemoteError(f"the server reported an error: {message}")


def _text(value) -> str:
    return value if isinstance(value, str) else ""
