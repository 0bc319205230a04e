"""What one JSON message from a server carries, in either API: text, counts, server timings, the model, an error.

The proxy reads what passes and never answers for it: a message it cannot read is named in a Reading's `problem`,
never raised. Messages are parsed once; counts and timings go through core.remote's checks (server_timings)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec

from core.proxy.routes import OLLAMA_APIS
from core.remote.counts import count, read_counts
from core.remote.server_timings import from_ollama


@dataclass
class Reading:
    text: str = ""  # what the user reads: content, reasoning, or a tool call's arguments
    has_output: bool = False  # generated output (text, reasoning or a tool call): one chunk of the reply
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_source: str | None = None  # the field the cached count came in
    timings: dict | None = None  # the server's own timings, normalised (core/remote/server_timings.py)
    finish_reason: str | None = None
    error: str | None = None  # the server's own error message
    problem: str | None = None  # why this message could not be read
    done: bool = False  # the stream's last message by its own API (Ollama's done: true)


def read_message(api: str, data: str | bytes) -> Reading:
    try:
        document = msgspec.json.decode(data)  # a few times json's speed: the proxy reads every chunk it passes on
    except (ValueError, RecursionError):  # msgspec's DecodeError is a ValueError
        return Reading(problem=f"a message that is not JSON: {_snippet(data)}")
    if not isinstance(document, dict):
        return Reading(problem=f"a message that is not a JSON object: {_snippet(data)}")
    reading = Reading(model=_text_or_none(document.get("model")))
    error = document.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        reading.error = _one_line(str(message))
    if api in OLLAMA_APIS:
        _read_ollama(document, reading)
    else:
        _read_openai(document, reading)
    return reading


def _read_openai(document: dict, reading: Reading) -> None:
    choices = document.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("delta") or choice.get("message") or {}
    parts: list[object] = []
    if isinstance(message, dict):
        parts += [message.get(key) for key in ("content", "reasoning_content", "reasoning")]
        parts += _tool_call_arguments(message.get("tool_calls"))
        reading.has_output = bool(message.get("tool_calls"))
    parts.append(choice.get("text"))  # /v1/completions
    reading.text = "".join(part for part in parts if isinstance(part, str))
    reading.has_output = reading.has_output or bool(reading.text)
    finish = choice.get("finish_reason")
    reading.finish_reason = finish if isinstance(finish, str) else None
    read_counts(document, reading)


def _read_ollama(document: dict, reading: Reading) -> None:
    message = document.get("message")
    parts: list[object] = [document.get("response"), document.get("thinking")]  # /api/generate
    if isinstance(message, dict):
        parts += [message.get("content"), message.get("thinking")]
        parts += _tool_call_arguments(message.get("tool_calls"))
        reading.has_output = bool(message.get("tool_calls"))
    reading.text = "".join(part for part in parts if isinstance(part, str))
    reading.has_output = reading.has_output or bool(reading.text)
    if document.get("done") is True:
        reading.done = True
        reason = document.get("done_reason")
        reading.finish_reason = reason if isinstance(reason, str) else "stop"
        reading.prompt_tokens = count(document.get("prompt_eval_count"))
        reading.completion_tokens = count(document.get("eval_count"))
        reading.cached_tokens = count(document.get("prompt_eval_cached_count"))
        reading.cache_source = "Ollama prompt_eval_cached_count"
        reading.timings = from_ollama(document)


def _tool_call_arguments(calls) -> list[str]:
    if not isinstance(calls, list):
        return []
    texts = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        texts.append(arguments if isinstance(arguments, str) else json.dumps(arguments) if arguments else "")
    return texts


def _text_or_none(value) -> str | None:
    return value[:200] if isinstance(value, str) and value else None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def _snippet(data: str | bytes) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return repr(text[:80])
