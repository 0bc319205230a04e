"""The speculation flags checked before any model loads: a draft model that cannot be found, and speculation asked of
a server (which speculates by its own settings)."""

from __future__ import annotations

from core.errors import LatencyLabError
from core.settings import GenerationSettings


def draft_model_problem(spec: str | None) -> str | None:
    """Why a draft model named on the command line cannot be found, said before the model loads (exit 2), or None.
    What is in the file (its vocabulary against the model's) is checked once the model is there."""
    if not spec:
        return None
    from core.model.source import resolve_model_source

    try:
        resolve_model_source(spec)
    except LatencyLabError as error:
        return f"the draft model: {error}"
    return None


def speculation_problem(model: str | None, settings: GenerationSettings) -> str | None:
    """Speculation is ours to run on a local model; a server speculates (or not) by its own settings, so the flags
    would be silently ignored there."""
    from core.remote.spec import is_remote_spec

    if is_remote_spec(model) and (settings.speculation != "off" or settings.draft_model):
        return (
            "--speculate and --draft-model apply to a local model; a server speculates by its own settings "
            "(llama-server's --model-draft, vLLM's --speculative-config)."
        )
    return None
