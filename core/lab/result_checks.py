"""Checks of a loaded lab result: the plots take logarithms and ratios of its numbers and the verdicts show its
text, so a file that says a TTFT is -1, NaN or "x", or a verdict is a number, is refused in one line instead of
failing inside a plot."""

from __future__ import annotations

# Quantities that are more than zero wherever a run measured them (None where it could not: a rate over no time).
POSITIVE = frozenset(
    {
        "ttft_s",
        "tpot_s",
        "e2e_s",
        "itl_p50_s",
        "step_time_s",
        "mean_step_time_s",
        "ttft_on_s",
        "ttft_off_s",
        "weight_bytes",
        "bandwidth_bytes_s",
        "ceiling_tok_s",
        "prefill_flops",
        "prefill_bytes",
        "decode_flops",
        "decode_bytes",
    }
)
POSITIVE_SUFFIXES = ("_tok_s", "_intensity", "_flops_per_s", "_bytes_per_s")
# Whole numbers a row is drawn at: a batch of 0, or turn "x", has no place on the axis.
COUNTS = frozenset({"batch_size", "turn", "prompt_tokens", "new_tokens", "repeats"})
# Other numbers a row may hold; each must at least be a finite number where present.
NUMERIC_SUFFIXES = ("_s", "_pct", "_tokens", "_bytes", "_words", "_count", "_agreement", "_of_ceiling")
# Above any real figure (a GPU's FLOP/s is about 1e15), below where a plot's padding overflows to infinity; NaN is
# never inside it.
LARGEST = 1e24


def _shown(value: object) -> str:
    """The value as the file has it, cut short: a bad value may be a megabyte of text."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_problem(key: str, value: object) -> str | None:
    """Why this row value cannot be drawn, or None. Keys the plots do not read as numbers (a model's name and shape,
    the per-run lists) may hold anything."""
    if "_runs_" in key:
        return None
    if key in COUNTS:
        least = 0 if key == "prompt_tokens" else 1
        if not isinstance(value, int) or isinstance(value, bool) or not least <= value < LARGEST:
            return f"{key} must be a whole number of at least {least}, not {_shown(value)}"
        return None
    if key in POSITIVE or key.endswith(POSITIVE_SUFFIXES):
        if value is not None and not (_is_number(value) and 0 < value < LARGEST):
            return f"{key} must be a number above zero (or null), not {_shown(value)}"
        return None
    numeric = key.endswith(NUMERIC_SUFFIXES) or _is_number(value)
    if numeric and value is not None and not (_is_number(value) and abs(value) < LARGEST):
        return f"{key} must be a number, not {_shown(value)}"
    return None


# What each sweep's plots read of a row (null where a run could not measure it: those rows draw no point).
REQUIRED = {
    "prompt": ("prompt_tokens", "ttft_s", "tpot_s"),
    "batch": ("batch_size", "aggregate_tok_s", "per_seq_tok_s"),
    "precision": ("dtype", "weight_bytes", "decode_tok_s"),
    "history": ("turn", "ttft_on_s", "ttft_off_s"),
    "bandwidth": ("bandwidth_bytes_s",),
    "size": ("model", "weight_bytes", "decode_tok_s"),
}


def row_problem(row: dict, sweep: str = "") -> str | None:
    """The first of a row's values that cannot be drawn (or that its sweep's plot needs and it lacks), said in words,
    or None. A row that records an error (a model that failed to load) is drawn as nothing and not checked."""
    if "error" in row:
        return None
    for key in REQUIRED.get(sweep, ()):
        if key not in row:
            return f"it has no {key}"
    for key in ("dtype", "model"):
        if key in REQUIRED.get(sweep, ()) and not isinstance(row[key], str):
            return f"{key} must be text, not {_shown(row[key])}"
    for key, value in row.items():
        problem = value_problem(str(key), value)
        if problem:
            return problem
    return None


def ceilings_problem(ceilings: object) -> str | None:
    """Why the result's machine ceilings cannot be drawn, or None (none at all is fine: the roofline then has no
    roof)."""
    if ceilings is None:
        return None
    if not isinstance(ceilings, dict):
        return "the ceilings entry must be an object"
    if not _count(ceilings.get("threads"), 1):
        return f"the ceilings' threads must be a whole number of at least 1, not {_shown(ceilings.get('threads'))}"
    cache = ceilings.get("last_level_cache_bytes", "missing")
    if cache is not None and not _count(cache, 0):
        return f"the ceilings' last_level_cache_bytes must be a whole number or null, not {_shown(cache)}"
    others = ceilings.get("others_share", "missing")
    if others is not None and not (_is_number(others) and 0 <= others <= 1):
        return f"the ceilings' others_share must be a share from 0 to 1 or null, not {_shown(others)}"
    if not isinstance(ceilings.get("loaded"), bool):
        return "the ceilings' loaded must be true or false"
    entries = ceilings.get("ceilings") or {}
    if not isinstance(entries, dict):
        return "the ceilings entry's ceilings must be an object"
    if not isinstance(ceilings.get("cpu"), str) or not isinstance(ceilings.get("measured_at"), str):
        return "the ceilings entry needs the cpu and the time they were measured at, as text"
    for name, ceiling in entries.items():
        if not isinstance(ceiling, dict):
            return f"the {name!s:.40} ceiling must be an object"
        if not isinstance(ceiling.get("name"), str) or not isinstance(ceiling.get("method"), str):
            return f"the {name!s:.40} ceiling needs its name and method as text"
        if not (_is_number(ceiling.get("median")) and _count(ceiling.get("passes"), 0)):
            return f"the {name!s:.40} ceiling needs its median as a number and its passes as a whole number"
        value, unit, label = ceiling.get("value"), ceiling.get("unit"), ceiling.get("label")
        if not (_is_number(value) and 0 < value < LARGEST):
            return f"the {name!s:.40} ceiling's value must be a number above zero, not {_shown(value)}"
        if unit not in ("flop/s", "byte/s"):
            return f"the {name!s:.40} ceiling's unit must be flop/s or byte/s, not {_shown(unit)}"
        if not isinstance(label, str):
            return f"the {name!s:.40} ceiling's label must be text"
    return None


SHAPE_COUNTS = ("layers", "width", "heads", "kv_heads", "head_dim", "ffn", "vocab", "weight_bytes")
VERDICT_TEXTS = ("key", "claim", "evidence", "criterion", "sentence")


def _count(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and least <= value < LARGEST


def arithmetic_problem(arithmetic: object) -> str | None:
    """Why the model's shape (what the roofline counts from) cannot be used, or None; none at all is fine."""
    if arithmetic is None:
        return None
    if not isinstance(arithmetic, dict):
        return "the model's arithmetic must be an object"
    for key in SHAPE_COUNTS:
        if not _count(arithmetic.get(key), 1):
            return (
                f"the model's arithmetic needs {key} as a whole number of at least 1, not {_shown(arithmetic.get(key))}"
            )
    for key, least in (("embedding_bytes", 0), ("cache_value_bytes", 1)):
        if key in arithmetic and not _count(arithmetic[key], least):
            return f"the model's arithmetic {key} must be a whole number of at least {least}"
    windows = arithmetic.get("windows")
    if windows is not None and not (isinstance(windows, list) and all(_count(window, 0) for window in windows)):
        return "the model's arithmetic windows must be a list of whole numbers"
    if not isinstance(arithmetic.get("prefill_precision"), (str, type(None))):
        return "the model's arithmetic prefill_precision must be text"
    return None


def machine_problem(machine: object) -> str | None:
    """Why the machine facts cannot be shown, or None."""
    if machine is None:
        return None
    if not isinstance(machine, dict):
        return "the machine entry must be an object"
    if not isinstance(machine.get("cpu"), (str, type(None))):
        return "the machine's cpu must be text"
    for key in ("memory_bytes", "last_level_cache_bytes", "cpu_share", "load_average_start", "load_average_end"):
        value = machine.get(key)
        if value is not None and not (_is_number(value) and 0 <= value < LARGEST):
            return f"the machine's {key} must be a number of at least 0, not {_shown(value)}"
    bandwidth = machine.get("bandwidth")
    if bandwidth is not None:
        if not isinstance(bandwidth, dict):
            return "the machine's bandwidth must be an object"
        for key in ("bytes_per_s", "median_bytes_per_s"):
            if not (_is_number(bandwidth.get(key)) and 0 < bandwidth[key] < LARGEST):
                return f"the machine's bandwidth needs {key} as a number above zero"
    return None


def verdict_problem(verdict: dict) -> str | None:
    """Why a verdict cannot be shown, or None."""
    for key in VERDICT_TEXTS:
        if not isinstance(verdict.get(key), str):
            return f"a verdict's {key} must be text, not {_shown(verdict.get(key))}"
    if verdict.get("holds") not in (True, False, None):
        return f"a verdict's holds must be true, false or null, not {_shown(verdict.get('holds'))}"
    return None


def results_problem(document: dict) -> str | None:
    """The first thing in a lab result (the sweeps' rows, the ceilings, the machine, the model's shape, the
    verdicts and notes) that cannot be drawn or shown, said in words; None for a result that can."""
    from core.lab.config import SWEEPS

    for sweep in SWEEPS:
        for index, row in enumerate(document.get(sweep) or []):
            problem = row_problem(row, sweep)
            if problem:
                return f"row {index + 1} of the {sweep!r} sweep: {problem}"
    model = document.get("model")
    if model is not None and not isinstance(model, dict):
        return "the model entry must be an object"
    for problem in (
        ceilings_problem(document.get("ceilings")) if isinstance(document.get("ceilings"), dict) else None,
        machine_problem(document.get("machine")),
        arithmetic_problem((model or {}).get("arithmetic")),
        *(verdict_problem(verdict) for verdict in document.get("verdicts") or []),
    ):
        if problem:
            return problem
    if not isinstance(document.get("notes") or [], list):
        return "the notes entry must be a list"
    if not isinstance(document.get("config") or {}, dict):
        return "the config entry must be an object"
    return None
