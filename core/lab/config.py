"""What a lab run measures: the selected sweeps and their parameters, validated in one place."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import core.settings
from core.errors import InvalidSettingsError
from core.settings import NumberLimit

SWEEPS = ("prompt", "precision", "batch", "bandwidth", "history", "speculation", "size")
# A run measures these unless told otherwise; the speculation sweep (ten timed replies a repeat) and the size sweep (the
# models to compare, given by the user) are asked for by name.
DEFAULT_SWEEPS = ("prompt", "precision", "batch", "bandwidth", "history")
DEFAULT_PROMPT_WORDS = (10, 100, 500, 1500)
DEFAULT_NEW_TOKENS = 50
DEFAULT_REPEATS = 3
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32)
DEFAULT_HISTORY_TURNS = 8

# TPOT needs at least two tokens, and a reply is bounded as everywhere else (core/settings.py); the other
# upper bounds refuse typos (1e6) that would run for hours.
NEW_TOKENS = NumberLimit("new tokens", 2, core.settings.MAX_NEW_TOKENS.high, DEFAULT_NEW_TOKENS, whole=True)
REPEATS = NumberLimit("repeats", 1, 100, DEFAULT_REPEATS, whole=True)
PROMPT_WORDS = NumberLimit("prompt words", 1, 100_000, None, whole=True)
BATCH_SIZE = NumberLimit("batch sizes", 1, 1024, None, whole=True)
HISTORY_TURNS = NumberLimit("history turns", 2, 64, DEFAULT_HISTORY_TURNS, whole=True)
MIN_NEW_TOKENS, MAX_NEW_TOKENS = int(NEW_TOKENS.low), int(NEW_TOKENS.high)
MAX_REPEATS = int(REPEATS.high)


def default_dtypes() -> tuple[str, ...]:
    """Every precision the loader knows now, read at run time so new formats join the sweep by themselves."""
    return tuple(core.settings.DTYPE_CHOICES)


@dataclass(frozen=True)
class LabConfig:
    """One lab run. dtypes=None means every entry of core.settings.DTYPE_CHOICES when the run starts."""

    sweeps: tuple[str, ...] = DEFAULT_SWEEPS
    prompt_words: tuple[int, ...] = DEFAULT_PROMPT_WORDS
    new_tokens: int = DEFAULT_NEW_TOKENS
    repeats: int = DEFAULT_REPEATS
    dtypes: tuple[str, ...] | None = None
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    history_turns: int = DEFAULT_HISTORY_TURNS  # the history sweep's chat: this many turns, cache on and off
    size_models: tuple[str, ...] = ()  # the size sweep's models (GGUF files, folders), each loaded in turn
    model: str | None = None
    dtype: str = core.settings.DTYPE.default
    device: str = core.settings.DEVICE.default
    decode_loop: str = core.settings.DECODE_LOOP.default  # see core/generation/decode; batch rows use generate()

    def __post_init__(self) -> None:
        validate_config(self)

    def resolved_dtypes(self) -> tuple[str, ...]:
        return self.dtypes if self.dtypes is not None else default_dtypes()

    def to_dict(self) -> dict:
        values = asdict(self)
        values["dtypes"] = list(self.resolved_dtypes())
        for key in ("sweeps", "prompt_words", "batch_sizes", "size_models"):
            values[key] = list(values[key])
        return values


def validate_config(config: LabConfig) -> None:
    core.settings.validate_decode_loop(config.decode_loop)
    unknown = [name for name in config.sweeps if name not in SWEEPS]
    if unknown or not config.sweeps:
        raise InvalidSettingsError(
            f"unknown sweep {', '.join(map(repr, unknown)) or '(none given)'}; choose from: {', '.join(SWEEPS)}."
        )
    if len(set(config.sweeps)) != len(config.sweeps):
        raise InvalidSettingsError("each sweep may be named only once.")
    _check_list(PROMPT_WORDS, config.prompt_words)
    if "size" in config.sweeps and len(set(config.size_models)) < 2:
        raise InvalidSettingsError(
            "the size sweep compares two or more models: name their files with --size-models (comma-separated)."
        )
    NEW_TOKENS.check(config.new_tokens)
    REPEATS.check(config.repeats)
    _check_list(BATCH_SIZE, config.batch_sizes)
    HISTORY_TURNS.check(config.history_turns)
    dtypes = config.resolved_dtypes()
    if not dtypes:
        raise InvalidSettingsError("give at least one dtype.")
    for dtype in (*dtypes, config.dtype):
        core.settings.validate_dtype(dtype)
    if len(set(dtypes)) != len(dtypes):
        raise InvalidSettingsError("each dtype may be named only once.")
    core.settings.validate_device(config.device)


def parse_int_list(text: str, what: str) -> tuple[int, ...]:
    """'10,100, 500' -> (10, 100, 500); anything else raises InvalidSettingsError naming the bad part."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise InvalidSettingsError(f"{what} must be a comma-separated list of whole numbers, like 1,2,4; got {text!r}.")
    values = []
    for part in parts:
        try:
            values.append(int(part))
        except ValueError:
            raise InvalidSettingsError(f"{what}: {part!r} is not a whole number.") from None
    return tuple(values)


def parse_name_list(text: str, what: str) -> tuple[str, ...]:
    parts = tuple(part.strip() for part in text.split(","))
    if not text.strip() or any(not part for part in parts):
        raise InvalidSettingsError(f"{what} must be a comma-separated list of names; got {text!r}.")
    return parts


def _check_list(limit: NumberLimit, values: tuple) -> None:
    if not values:
        raise InvalidSettingsError(f"give at least one value for {limit.label}.")
    for value in values:
        limit.check(value)
    if len(set(values)) != len(values):
        raise InvalidSettingsError(f"{limit.label} must not repeat a value; got {', '.join(map(str, values))}.")
