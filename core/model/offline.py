"""Turn off every network path of the Hugging Face libraries when the model is on this machine."""

from __future__ import annotations

import os

from core.errors import ModelLoadError
from core.model.source import resolve_model_source

OFFLINE_VARIABLES = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def use_offline_mode_for(spec: str | None) -> bool:
    """Set the offline variables when spec is local or embedded; True when it did.

    Call it before transformers or huggingface_hub is imported: they read these variables once, at import.
    """
    try:
        local = resolve_model_source(spec).is_local
    except ModelLoadError:
        local = False  # the loader will report the bad spec; a hub id keeps its one way to be fetched
    if local:
        os.environ.update(OFFLINE_VARIABLES)
    return local
