"""The schema a loaded lab result must pass: the plots take logarithms and ratios of its numbers and the verdicts show
its text, so a file that says a TTFT is -1, NaN or "x", or a verdict is a number, is refused in one line naming the
field, instead of failing inside a plot. Built from the checks the cache files use (core/cache_file.py)."""

from __future__ import annotations

from typing import Any

from core.cache_file import (
    CacheFileError,
    Check,
    flag,
    list_of,
    number,
    optional,
    positive,
    record,
    text,
    whole,
)

# Above any real figure (a GPU's FLOP/s is about 1e15), below where a plot's padding overflows to infinity.
LARGEST = 1e24
MOST = 2**40  # tokens, batch sizes, turns: far above any run
MOST_ROWS = 100_000
# Measured where the run could: null where it could not (a rate over no time), and a null draws no point.
MEASURED = optional(positive(LARGEST))
SIGNED = optional(number(-LARGEST, LARGEST))
COUNT = whole(1, MOST)
TOKENS = whole(0, MOST)
RUNS = optional(list_of(SIGNED, MOST_ROWS))

# What each sweep's rows hold; a row must have what its plot reads (required), and other keys pass unchecked.
RUN_FIELDS = {"prompt_tokens": TOKENS, "new_tokens": COUNT, "repeats": TOKENS}  # repeats: the runs that finished
TIMES = dict.fromkeys(("ttft_s", "tpot_s", "e2e_s", "decode_tok_s", "prefill_tok_s", "itl_p50_s"), MEASURED)
ROOFLINE = {
    f"{phase}_{quantity}": MEASURED
    for phase in ("prefill", "decode")
    for quantity in ("flops", "bytes", "intensity", "flops_per_s", "bytes_per_s")
}
ROWS = {
    "prompt": record(
        {
            **RUN_FIELDS,
            **TIMES,
            **ROOFLINE,
            "prompt_words": TOKENS,
            "predicted_e2e_s": SIGNED,
            "residual_s": SIGNED,
            "residual_pct": SIGNED,
            "steady_residual_pct": SIGNED,
            "ttft_runs_s": RUNS,
            "tpot_runs_s": RUNS,
            "e2e_runs_s": RUNS,
            "steady_residual_runs_pct": RUNS,
        },
        required=("prompt_tokens", "ttft_s", "tpot_s"),
    ),
    "batch": record(
        {
            **RUN_FIELDS,
            **ROOFLINE,
            "batch_size": COUNT,
            "ttft_s": MEASURED,
            "step_time_s": MEASURED,
            "mean_step_time_s": MEASURED,
            "per_seq_tok_s": MEASURED,
            "aggregate_tok_s": MEASURED,
        },
        required=("batch_size", "aggregate_tok_s", "per_seq_tok_s"),
    ),
    "precision": record(
        {
            **RUN_FIELDS,
            **TIMES,
            **ROOFLINE,
            "dtype": text(100),
            "weight_bytes": MEASURED,
            "parameter_count": optional(TOKENS),
            "compared_tokens": optional(TOKENS),
            "token_agreement": optional(number(0, 1)),
            "matching_prefix_tokens": optional(TOKENS),
        },
        required=("dtype", "weight_bytes", "decode_tok_s"),
    ),
    "bandwidth": record(
        {
            "dtype": text(100),
            "weight_bytes": MEASURED,
            "bandwidth_bytes_s": MEASURED,
            "ceiling_tok_s": MEASURED,
            "decode_tok_s": MEASURED,
            "fraction_of_ceiling": optional(number(0, LARGEST)),
        },
        required=("bandwidth_bytes_s",),
    ),
    "history": record(
        {
            **RUN_FIELDS,
            "turn": COUNT,
            "cached_tokens": optional(TOKENS),
            "prefilled_tokens": optional(TOKENS),
            "ttft_on_s": MEASURED,
            "ttft_off_s": MEASURED,
            "ttft_on_runs_s": RUNS,
            "ttft_off_runs_s": RUNS,
        },
        required=("turn", "ttft_on_s", "ttft_off_s"),
    ),
    "size": record(
        {**RUN_FIELDS, **TIMES, "model": text(), "weight_bytes": MEASURED},
        required=("model", "weight_bytes", "decode_tok_s"),
    ),
    "speculation": record({}),  # not drawn in the Lab's plots: its rows need only be objects
}
SHAPE = record(
    {
        **dict.fromkeys(("layers", "width", "heads", "kv_heads", "head_dim", "ffn", "vocab", "weight_bytes"), COUNT),
        "embedding_bytes": TOKENS,
        "windows": list_of(TOKENS, 10_000),
        "cache_value_bytes": whole(1, 64),
        "prefill_precision": optional(text(40)),
    },
    required=("layers", "width", "heads", "kv_heads", "head_dim", "ffn", "vocab", "weight_bytes"),
)
MACHINE = record(
    {
        "cpu": optional(text()),
        **{
            name: optional(number(0, LARGEST))
            for name in (
                "memory_bytes",
                "last_level_cache_bytes",
                "cpu_share",
                "load_average_start",
                "load_average_end",
            )
        },
        "bandwidth": optional(
            record(
                {"bytes_per_s": positive(LARGEST), "median_bytes_per_s": positive(LARGEST)},
                required=("bytes_per_s", "median_bytes_per_s"),
            )
        ),
    }
)
VERDICT = record(
    {
        **{name: text(100_000) for name in ("key", "claim", "evidence", "criterion", "sentence")},
        "holds": optional(flag),
    },
    required=("key", "claim", "evidence", "criterion", "sentence"),
)


def unless_failed(check: Check) -> Check:
    """A row that records an error (a model that failed to load) is drawn as nothing: only its being an object counts."""

    def checked(value: Any, where: str) -> Any:
        return value if isinstance(value, dict) and "error" in value else check(value, where)

    return checked


def _ceilings(value: Any, where: str) -> Any:
    from core.roofline.ceilings import checked_ceilings

    checked_ceilings(value, where, cached=False)
    return value


RESULT = record(
    {
        **{sweep: list_of(unless_failed(row), MOST_ROWS) for sweep, row in ROWS.items()},
        "ceilings": optional(_ceilings),
        "machine": optional(MACHINE),
        "model": optional(record({"arithmetic": optional(SHAPE)})),
        "verdicts": list_of(VERDICT, 1_000),
        "notes": optional(list_of(text(100_000), 1_000)),
        "config": optional(record({})),
    }
)


def results_problem(document: dict) -> str | None:
    """The first field of a lab result that cannot be drawn or shown, said in words (its path from the file's top,
    "prompt[0].ttft_s"); None for a result that can."""
    try:
        RESULT(document, "the file")
    except CacheFileError as error:
        return str(error)
    return None
