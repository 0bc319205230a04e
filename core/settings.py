"""Validated generation settings and the precisions the loader understands."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.errors import InvalidSettingsError

# Beyond this the reply would not fit any context window we ship for, and a typo like 1e9
# should be refused rather than accepted and silently capped.
MAX_NEW_TOKENS_LIMIT = 32_768

# Below this, logits / temperature overflow to inf and sampling fails ("probability tensor contains
# inf/nan"); 0 itself means greedy.
MIN_SAMPLING_TEMPERATURE = 1e-3

# int8 and int4 are weight-only quantised layers on torch's CPU kernels (see core/quant); int4 of
# a Q4_1 GGUF runs the file's own 4-bit weights.
DTYPE_CHOICES = ("float32", "bfloat16", "int8", "int4")
QUANTISED_DTYPES = ("int8", "int4")
DEVICE_CHOICES = ("cpu", "cuda")
# "lean" is core/decode's loop (Llama-family models; others fall back); "generate" is transformers' own.
DECODE_LOOP_CHOICES = (LEAN_LOOP, GENERATE_LOOP) = ("lean", "generate")


@dataclass(frozen=True)
class GenerationSettings:
    """How to sample a reply. Temperature 0 means greedy decoding."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    decode_loop: str = "lean"

    def __post_init__(self) -> None:
        validate_generation_settings(self)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def validate_generation_settings(settings: GenerationSettings) -> None:
    max_new = settings.max_new_tokens
    if isinstance(max_new, bool) or not isinstance(max_new, int) or not 1 <= max_new <= MAX_NEW_TOKENS_LIMIT:
        raise InvalidSettingsError(
            f"max new tokens must be a whole number from 1 to {MAX_NEW_TOKENS_LIMIT:,}; got {max_new!r}."
        )
    if not _is_number(settings.temperature) or not 0.0 <= settings.temperature <= 2.0:
        raise InvalidSettingsError(f"temperature must lie in [0, 2]; got {settings.temperature!r}.")
    if 0.0 < settings.temperature < MIN_SAMPLING_TEMPERATURE:
        raise InvalidSettingsError(
            f"temperature must be 0 (greedy) or at least {MIN_SAMPLING_TEMPERATURE:g}; got {settings.temperature!r}."
        )
    if not _is_number(settings.top_p) or not 0.0 < settings.top_p <= 1.0:
        raise InvalidSettingsError(f"top-p must lie in (0, 1]; got {settings.top_p!r}.")
    if settings.seed is not None and (isinstance(settings.seed, bool) or not isinstance(settings.seed, int)
                                      or not 0 <= settings.seed < 2**32):
        raise InvalidSettingsError(f"seed must be a whole number from 0 to 2**32 - 1; got {settings.seed!r}.")
    validate_decode_loop(settings.decode_loop)


def validate_decode_loop(loop: str) -> str:
    if loop not in DECODE_LOOP_CHOICES:
        raise InvalidSettingsError(f"decode loop must be one of: {', '.join(DECODE_LOOP_CHOICES)}; got {loop!r}.")
    return loop


def validate_dtype(dtype: str) -> str:
    if dtype not in DTYPE_CHOICES:
        raise InvalidSettingsError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPE_CHOICES)}.")
    return dtype


def _is_number(value: object) -> bool:
    # NaN fails every range check on its own, but bools would slip through as 0 and 1.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
