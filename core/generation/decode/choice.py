"""Which decode loop a reply runs on: the lean one where the model allows it, else transformers' generate()."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from core.generation.decode.decoder import LeanDecoder
from core.generation.decode.families import lean_pass_refusal
from core.generation.decode.loop import generation_config_blocks_lean_loop
from core.settings import GENERATE_LOOP, LEAN_LOOP

# A decoder holds fused copies of the int4 weights; one per model, dropped with the model.
_decoders: "weakref.WeakKeyDictionary[Any, LeanDecoder]" = weakref.WeakKeyDictionary()
_decoders_lock = threading.Lock()


def lean_loop_refusal(model: Any) -> str | None:
    """Why this model must use generate(), or None when the lean loop covers it."""
    return lean_pass_refusal(model) or generation_config_blocks_lean_loop(model)


def loop_for(model: Any, requested: str) -> tuple[str, str | None]:
    """(the loop that will run, why it differs from the one requested or None)."""
    if requested == GENERATE_LOOP:
        return GENERATE_LOOP, None
    refusal = lean_loop_refusal(model)
    return (GENERATE_LOOP, refusal) if refusal else (LEAN_LOOP, None)


def lean_decoder(model: Any) -> LeanDecoder:
    with _decoders_lock:
        decoder = _decoders.get(model)
        if decoder is None:
            decoder = _decoders[model] = LeanDecoder(model)
        return decoder
