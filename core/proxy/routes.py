"""Which requests the proxy meters: the OpenAI-compatible and Ollama generation endpoints, named by their path."""

from __future__ import annotations

OPENAI_CHAT = "openai-chat"
OPENAI_COMPLETIONS = "openai-completions"
OLLAMA_CHAT = "ollama-chat"
OLLAMA_GENERATE = "ollama-generate"
OLLAMA_APIS = (OLLAMA_CHAT, OLLAMA_GENERATE)

# By the path's end, so a server mounted under a prefix (/openai/v1/chat/completions) is metered too.
_ENDINGS = (
    ("/chat/completions", OPENAI_CHAT),
    ("/completions", OPENAI_COMPLETIONS),
    ("/api/chat", OLLAMA_CHAT),
    ("/api/generate", OLLAMA_GENERATE),
)


def api_of(method: str, path: str) -> str | None:
    """The generation API a request calls (one of the names above), or None: passed through unmetered."""
    if method.upper() != "POST":
        return None
    path = path.split("?", 1)[0].rstrip("/")
    return next((api for ending, api in _ENDINGS if path.endswith(ending)), None)


def streams_by_default(api: str) -> bool:
    """What a request that leaves out `stream` gets: Ollama streams unless told not to, OpenAI does not."""
    return api in OLLAMA_APIS
