"""The server's own account of a reply, normalised to milliseconds so the window can set it beside the client's."""

from __future__ import annotations

import math


def from_llama_cpp(timings: dict) -> dict:
    """llama.cpp's server (llama-server) sends `timings` with the last chunk."""
    normalised = {
        "source": "llama.cpp timings",
        "prompt_ms": _number(timings.get("prompt_ms")),
        "prompt_n": _number(timings.get("prompt_n")),
        "generation_ms": _number(timings.get("predicted_ms")),
        "generated_n": _number(timings.get("predicted_n")),
        "per_token_ms": _number(timings.get("predicted_per_token_ms")),
        "cache_n": _number(timings.get("cache_n")),
        # Speculative decoding (--spec-type): drafts proposed and accepted over the reply, as the server counts them.
        "draft_n": _number(timings.get("draft_n")),
        "draft_n_accepted": _number(timings.get("draft_n_accepted")),
    }
    return {key: value for key, value in normalised.items() if value is not None}


def from_ollama(done: dict) -> dict:
    """Ollama's last line carries durations in nanoseconds."""
    eval_count = _number(done.get("eval_count"))
    eval_ns = _number(done.get("eval_duration"))
    normalised = {
        "source": "Ollama durations",
        "prompt_ms": _ms(done.get("prompt_eval_duration")),
        "prompt_n": _number(done.get("prompt_eval_count")),
        "generation_ms": _ms(eval_ns),
        "generated_n": eval_count,
        "per_token_ms": eval_ns / 1e6 / eval_count if eval_ns and eval_count else None,
        "load_ms": _ms(done.get("load_duration")),
        "total_ms": _ms(done.get("total_duration")),
    }
    return {key: value for key, value in normalised.items() if value is not None}


def from_vllm(metrics: dict) -> dict:
    """vLLM's per-request metrics, where a deployment returns them (field names as in its RequestMetrics)."""
    first = _number(metrics.get("first_token_time"))
    scheduled = _number(metrics.get("first_scheduled_time"))
    arrival = _number(metrics.get("arrival_time"))
    normalised = {
        "source": "vLLM request metrics",
        "queue_ms": (scheduled - arrival) * 1e3 if scheduled and arrival else None,
        "prompt_ms": (first - scheduled) * 1e3 if first and scheduled else None,
    }
    return {key: value for key, value in normalised.items() if value is not None}


def _number(value) -> float | int | None:
    """A number the server sent, or None: NaN, infinity and 400-digit counts are not timings."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if abs(value) <= 2**53 and math.isfinite(value) else None


def _ms(nanoseconds) -> float | None:
    value = _number(nanoseconds)
    return value / 1e6 if value is not None else None
