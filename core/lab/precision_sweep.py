"""One question at each weight precision: weight bytes, speed, and how often greedy tokens match float32's."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from core.chats.session import render_prompt_ids
from core.errors import LatencyLabError
from core.lab.collect import collect_between_models
from core.lab.measure import SweepContext, median_or_none, timed_generation
from core.lab.model_rows import rows_per_model
from core.model.loader import LoadedModel

REFERENCE_DTYPE = "float32"
AGREEMENT_TOKENS = 32
# A real question through the chat template, so the tokens compared across precisions are ordinary prose.
PRECISION_QUESTION = "Explain in a few sentences why the sky is blue."

ModelLoader = Callable[[str], LoadedModel]


def precision_prompt_ids(tokenizer) -> list[int]:
    return render_prompt_ids(tokenizer, [{"role": "user", "content": PRECISION_QUESTION}])


def measurements_per_dtype(repeats: int) -> int:
    return 2 + repeats  # load, warm-up, timed runs


def precision_order(dtypes: Sequence[str]) -> list[str]:
    """The reference first, so every later row can be compared with it as soon as it is measured."""
    return sorted(dtypes, key=lambda dtype: dtype != REFERENCE_DTYPE)


def sweep_precisions(
    load: ModelLoader, dtypes: Sequence[str], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """Yield one row per dtype; a dtype that cannot load or run yields a row with its error instead of numbers.

    When float32 is not among the dtypes it is still loaded once, only for its reference tokens; the
    caller counts that as measurements_per_dtype(0) extra measurements.
    """
    reference: list[int] | None = None
    if REFERENCE_DTYPE not in dtypes:
        try:
            reference = _reference_tokens(load, new_tokens, context)
        except LatencyLabError:
            reference = None  # rows then carry no agreement share rather than a wrong one

    def measure(loaded: LoadedModel, dtype: str) -> dict:
        nonlocal reference
        row, tokens = measure_precision(loaded, new_tokens, repeats, context)
        if dtype == REFERENCE_DTYPE:  # first in the order: every later row is compared with it
            reference = tokens
        return {**row, **agreement(tokens, reference)}

    yield from rows_per_model(
        "precision sweep",
        precision_order(dtypes),
        load,
        measure,
        context,
        key="dtype",
        steps=measurements_per_dtype(repeats),
    )


def measure_precision(
    loaded: LoadedModel, new_tokens: int, repeats: int, context: SweepContext
) -> tuple[dict, list[int]]:
    ids = precision_prompt_ids(loaded.tokenizer)
    progress = context.progress
    progress.announce(f"precision sweep: {loaded.dtype} warm-up")
    timed_generation(loaded, ids, min(new_tokens, 4), context)
    progress.advance(f"precision sweep: {loaded.dtype} warmed up")
    runs = []
    tokens: list[int] = []
    for repeat in range(repeats):
        context.check_cancel()
        progress.announce(f"precision sweep: {loaded.dtype}, run {repeat + 1}/{repeats}")
        trace = timed_generation(loaded, ids, new_tokens, context)
        runs.append(trace.metrics())
        tokens = tokens or trace.token_ids
        progress.advance(f"precision sweep: {loaded.dtype}, run {repeat + 1}/{repeats} done")
    tpot = median_or_none(run.tpot_s for run in runs)
    row = {
        "dtype": loaded.dtype,
        "weight_bytes": loaded.weight_bytes,
        "parameter_count": loaded.parameter_count,
        "prompt_tokens": len(ids),
        "new_tokens": new_tokens,
        "repeats": len(runs),
        "ttft_s": median_or_none(run.ttft_s for run in runs),
        "tpot_s": tpot,
        "decode_tok_s": 1.0 / tpot if tpot else None,
        "e2e_s": median_or_none(run.e2e_s for run in runs),
        "arithmetic": loaded.arithmetic,
    }
    return row, tokens


def agreement(tokens: Sequence[int], reference: Sequence[int] | None) -> dict:
    """Share of positions, among the first 32 (or all, if fewer were generated), where the greedy token matches."""
    if reference is None:
        return {"compared_tokens": 0, "token_agreement": None, "matching_prefix_tokens": None}
    compared = min(AGREEMENT_TOKENS, len(tokens), len(reference))
    same = [tokens[i] == reference[i] for i in range(compared)]
    prefix = same.index(False) if False in same else compared
    return {
        "compared_tokens": compared,
        "token_agreement": sum(same) / compared if compared else None,
        "matching_prefix_tokens": prefix,
    }


def _reference_tokens(load: ModelLoader, new_tokens: int, context: SweepContext) -> list[int]:
    progress = context.progress
    progress.announce(f"precision sweep: loading {REFERENCE_DTYPE} for reference tokens")
    loaded = load(REFERENCE_DTYPE)
    progress.advance(f"precision sweep: {REFERENCE_DTYPE} loaded")
    try:
        return timed_generation(loaded, precision_prompt_ids(loaded.tokenizer), new_tokens, context).token_ids
    finally:
        progress.advance(f"precision sweep: {REFERENCE_DTYPE} reference taken")
        del loaded
        collect_between_models()
