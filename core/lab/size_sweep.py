"""Decode speed against the bytes of weights it reads: the same question on models of several sizes.

The chapter's first consequence, shown directly: decode reads every weight once a token, so tok/s ≈ bandwidth / model
bytes. Each model is loaded in turn (one at a time: a 7B and a 1B need not fit together), warmed up, and timed; a row
gives its weight bytes, TPOT and the bytes it read a second (weight bytes × decode tok/s), which the claim says stays
about the same whatever the size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from core.lab.measure import SweepContext, median_or_none, timed_generation
from core.lab.model_rows import rows_per_model
from core.lab.precision_sweep import precision_prompt_ids
from core.model.loader import LoadedModel

SpecLoader = Callable[[str], LoadedModel]


def measurements_per_model(repeats: int) -> int:
    return 2 + repeats  # load, warm-up, timed runs


def model_label(spec: str) -> str:
    """A model's name in a row: a file's name without its folder, or the spec as given."""
    return Path(spec).name if spec.endswith(".gguf") else spec


def sweep_model_sizes(
    load: SpecLoader, specs: Sequence[str], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """One row per model, smallest weights first once measured; a model that cannot load or run gives a row with its
    error instead of numbers."""
    yield from rows_per_model(
        "size sweep",
        specs,
        load,
        lambda loaded, spec: _measure(loaded, new_tokens, repeats, context, model_label(spec)),
        context,
        key="model",
        label=model_label,
        steps=measurements_per_model(repeats),
        release=True,
    )


def _measure(loaded: LoadedModel, new_tokens: int, repeats: int, context: SweepContext, label: str) -> dict:
    ids = precision_prompt_ids(loaded.tokenizer)
    timed_generation(loaded, ids, new_tokens, context)  # warm-up: first-touch of the weights, kernels' first run
    context.progress.advance(f"size sweep: {label} warmed up")
    traces = []
    for repeat in range(repeats):
        traces.append(timed_generation(loaded, ids, new_tokens, context))
        context.progress.advance(f"size sweep: {label} run {repeat + 1} of {repeats}")
    tpot = median_or_none(trace.metrics().tpot_s for trace in traces)
    decode_tok_s = 1 / tpot if tpot else None
    facts = loaded.describe()
    return {
        "weight_bytes": loaded.weight_bytes,
        "parameters": facts.parameters,
        "dtype": facts.dtype,
        "new_tokens": new_tokens,
        "tpot_s": tpot,
        "decode_tok_s": decode_tok_s,
        "read_bytes_s": loaded.weight_bytes * decode_tok_s if decode_tok_s else None,
    }
