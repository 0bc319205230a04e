"""Ollama's native /api/chat: the request body, and reading each NDJSON line (or a whole response) into Pieces."""

from __future__ import annotations

from core.remote.counts import count
from core.remote.errors import RemoteError
from core.remote.pieces import Piece, json_object
from core.remote.server_timings import from_ollama


def request_body(
    model: str,
    messages: list[dict],
    *,
    stream: bool,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
) -> dict:
    options: dict = {"num_predict": max_tokens, "temperature": temperature, "top_p": top_p}
    if seed is not None:
        options["seed"] = seed
    return {"model": model, "messages": messages, "stream": stream, "options": options}


def read_line(line: str) -> Piece:
    document = json_object(line, "Ollama", "line")
    if document.get("error"):
        raise RemoteError(f"Ollama reported an error: {document['error']}")
    message = document.get("message") or {}
    piece = Piece(
        text=message.get("content") or "" if isinstance(message, dict) else "",
        reasoning=(message.get("thinking") or "") if isinstance(message, dict) else "",
    )
    if document.get("done"):
        piece.done = True
        piece.finish_reason = document.get("done_reason") or "stop"
        piece.prompt_tokens = count(document.get("prompt_eval_count"))
        piece.completion_tokens = count(document.get("eval_count"))
        piece.timings = from_ollama(document)
        # Ollama since 0.30 counts cached tokens in prompt_eval_count and names them apart; an older one
        # sends no such field, and its prompt_eval_count alone cannot tell cached from new: not reported.
        if count(document.get("prompt_eval_cached_count")) is not None:
            piece.cached_tokens = document["prompt_eval_cached_count"]
            piece.cache_source = "Ollama prompt_eval_cached_count"
    return piece
