"""A server's own timings beside the client's: their definitions, and the difference that shows the network's share."""

from __future__ import annotations

DEFINITIONS = {
    "prompt_ms": "The server's time for the prompt's pass (llama.cpp timings.prompt_ms; Ollama prompt_eval_duration).",
    "per_token_ms": "The server's time per generated token (llama.cpp predicted_per_token_ms; Ollama "
    "eval_duration / eval_count).",
    "generation_ms": "The server's time generating the reply's tokens (llama.cpp predicted_ms; Ollama eval_duration).",
    "load_ms": "The server's time loading the model for this request (Ollama load_duration).",
    "cache_n": "Prompt tokens the server took from its cache instead of computing (llama.cpp cache_n).",
    "ttft_minus_prompt_s": "Client TTFT minus the server's prompt time: the network, the server's queue and its "
    "templating and tokenising.",
}


def compare(client_ttft_s: float | None, server: dict | None) -> dict | None:
    """The client's view beside the server's: TTFT(client) - prompt time(server) = network + queue + templating."""
    if not server or client_ttft_s is None or server.get("prompt_ms") is None:
        return None
    return {"ttft_minus_prompt_s": client_ttft_s - server["prompt_ms"] / 1e3}
