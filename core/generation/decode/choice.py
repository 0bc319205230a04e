"""Which decode loop a reply runs on: the lean one where the model allows it, else transformers' generate()."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from core.generation.decode.families import lean_pass_refusal
from core.generation.decode.kernel_decoder import KernelDecoder
from core.generation.decode.loop import generation_config_blocks_lean_loop
from core.model.kernel_causal_lm import KernelCausalLM
from core.settings import GENERATE_LOOP, LEAN_LOOP

# A decoder holds fused copies of the int4 weights (or a kernel model's cache); one per model, dropped with it.
_decoders: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_decoders_lock = threading.Lock()

# The native kernels are a model without transformers' layers: generate() cannot run it.
KERNELS_HAVE_NO_GENERATE = (
    "a native GGUF runs on Latency Lab's C kernels, which have no transformers layers for "
    "generate(); pick float32, bfloat16, int8 or int4 for generate()"
)


def on_kernels(model: Any) -> bool:
    """Whether the model runs on Latency Lab's C kernels (a GGUF at native precision), not on transformers' layers:
    the one question of a model's kind the generation layer asks, here, to choose its loop and decoder."""
    return isinstance(model, KernelCausalLM)


def lean_loop_refusal(model: Any) -> str | None:
    """Why this model must use generate(), or None when the lean loop covers it."""
    if on_kernels(model):
        return generation_config_blocks_lean_loop(model)
    return lean_pass_refusal(model) or generation_config_blocks_lean_loop(model)


def loop_for(model: Any, requested: str) -> tuple[str, str | None]:
    """(the loop that will run, why it differs from the one requested or None)."""
    if on_kernels(model):
        # Extras only generate() applies (a repetition penalty, say) cannot be had here: say so and run lean.
        refusal = generation_config_blocks_lean_loop(model)
        if requested == GENERATE_LOOP:
            return LEAN_LOOP, KERNELS_HAVE_NO_GENERATE
        return LEAN_LOOP, (f"{refusal}; the native kernels ignore it" if refusal else None)
    if requested == GENERATE_LOOP:
        return GENERATE_LOOP, None
    refusal = lean_loop_refusal(model)
    return (GENERATE_LOOP, refusal) if refusal else (LEAN_LOOP, None)


def lean_decoder(model: Any):
    """The model's LeanDecoder, or its KernelDecoder on the C kernels (LeanDecoder's imports are not needed then)."""
    with _decoders_lock:
        decoder = _decoders.get(model)
        if decoder is None:
            if on_kernels(model):
                decoder = KernelDecoder(model.kernel)
            else:
                from core.generation.decode.decoder import LeanDecoder

                decoder = LeanDecoder(model)
            _decoders[model] = decoder
        return decoder
