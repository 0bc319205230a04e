"""The one schema of settings: every limit and default, and the one check each value goes through.

The CLI's argparse, the window's spin boxes and saved settings, the lab's config and the loader all
read their ranges and defaults from here, so a value one of them accepts the others accept too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Generic, TypeGuard, TypeVar

from core.errors import InvalidSettingsError

# A limit's default keeps its own type: int for a whole number, None where there is none (the seed).
_Default = TypeVar("_Default", bound="float | None")


@dataclass(frozen=True)
class NumberLimit(Generic[_Default]):
    """A numeric setting's name for people, its range and its default; check() words every refusal alike."""

    label: str
    low: float
    high: float
    default: _Default
    whole: bool = False
    low_open: bool = False  # the range excludes low itself

    def check(self, value: object) -> None:
        kind = "a whole number" if self.whole else "a number"
        in_range = (
            _is_number(value)
            and (not self.whole or isinstance(value, int))
            and ((self.low < value if self.low_open else self.low <= value) and value <= self.high)
        )
        if not in_range:
            span = (
                f"above {_show(self.low)} and at most {_show(self.high)}"
                if self.low_open
                else f"from {_show(self.low)} to {_show(self.high)}"
            )
            raise InvalidSettingsError(f"{self.label} must be {kind} {span}; got {value!r}.")


@dataclass(frozen=True)
class ChoiceLimit:
    label: str
    choices: tuple[str, ...]
    default: str

    def check(self, value: object, choices: tuple[str, ...] | None = None) -> str:
        choices = self.choices if choices is None else choices
        if value not in choices:
            raise InvalidSettingsError(f"{self.label} must be one of: {', '.join(choices)}; got {value!r}.")
        return value


# Beyond this the reply would not fit any context window we ship for, and a typo like 1e9
# should be refused rather than accepted and silently capped.
MAX_NEW_TOKENS = NumberLimit("max new tokens", 1, 32_768, 256, whole=True)
TEMPERATURE = NumberLimit("temperature", 0.0, 2.0, 0.0)
TOP_P = NumberLimit("top-p", 0.0, 1.0, 1.0, low_open=True)
SEED = NumberLimit("seed", 0, 2**32 - 1, None, whole=True)  # None: a fresh random seed each reply
# How long a server may send nothing (while connecting or mid-reply) before the reply is given up.
SERVER_TIMEOUT = NumberLimit("server timeout (s)", 1, 3600, 60)

# The prompt cache keeps the chats it has set aside (another chat opened, a lab run) up to this many positions of the
# loaded model's keys and values, least recently used out first; the live cache of the chat being answered comes on
# top. A position's size differs a thousandfold between models (23,040 bytes in float16 for the embedded
# SmolLM2-135M, 131,072 for an 8B Llama with 8 KV heads, 524,288 for Llama-2-7B's 32), so the bound is in positions,
# and never more than PROMPT_CACHE_MEMORY_SHARE of the memory free when the model loaded.
PROMPT_CACHE_SAVED_POSITIONS = 16_384
PROMPT_CACHE_MEMORY_SHARE = 0.25


def prompt_cache_budget(position_bytes: int, available_bytes: int | None) -> int:
    """Bytes of saved caches the prompt cache keeps for a model whose positions take position_bytes each."""
    wanted = PROMPT_CACHE_SAVED_POSITIONS * position_bytes
    if available_bytes is None:
        return wanted
    return max(position_bytes, min(wanted, int(available_bytes * PROMPT_CACHE_MEMORY_SHARE)))


# Below this, logits / temperature overflow to inf and sampling fails ("probability tensor contains
# inf/nan"); 0 itself means greedy.
MIN_SAMPLING_TEMPERATURE = 1e-3

# "native" (the one meaning of the word: a precision) runs a GGUF in its own quantisation, on the C kernels or torch's
# int4 kernel (core/model/native_load.py), shown as "native (Q4_K_M)";
# anything else loads in float32 under it. int8 and int4 are weight-only quantised layers on torch's
# CPU kernels (see core/quant); int4 of a Q4_1 GGUF runs the file's own 4-bit weights.
NATIVE_DTYPE = "native"
DTYPE = ChoiceLimit("dtype", (NATIVE_DTYPE, "float32", "bfloat16", "int8", "int4"), NATIVE_DTYPE)
QUANTISED_DTYPES = ("int8", "int4", NATIVE_DTYPE)
DEVICE = ChoiceLimit("device", ("cpu", "cuda"), "cpu")
# "lean" is core/generation/decode's loop (Llama, Qwen, Mistral, Phi-3 and Gemma models; others fall back);
# "generate" is transformers'.
LEAN_LOOP, GENERATE_LOOP = "lean", "generate"
DECODE_LOOP = ChoiceLimit("decode loop", (LEAN_LOOP, GENERATE_LOOP), LEAN_LOOP)
# Speculative decoding: "ngram" drafts from the prompt and the reply so far (prompt lookup), "draft" with a smaller
# model of the same vocabulary (draft_model, a GGUF file); the model checks a step's drafts in one pass.
SPECULATION = ChoiceLimit("speculation", ("off", "ngram", "draft"), "off")
DRAFT_TOKENS = NumberLimit("draft tokens", 1, 16, 8, whole=True)
# The proxy (`latencylab proxy`, the Traffic tab) listens here unless told otherwise: this machine only.
PROXY_HOST = "127.0.0.1"
# The port the user's tools connect to; 0 takes any free one.
PROXY_PORT = NumberLimit("proxy port", 0, 65535, 8788, whole=True)

# Latency budgets (SLOs) for an interactive chat, as load testers set them (vLLM's --goodput, AIPerf, GuideLLM) but
# for a person reading: text should appear within a second, and then come at least as fast as it is read. A reader
# at 250 words a minute, at about six characters a word (five letters and a space) and 0.75 words a token (the
# usual rule for English text), needs a token every 60 / (250 / 0.75) s = 180 ms.
READING_WPM = 250
READING_CHARS_PER_S = READING_WPM * 6 / 60
WORDS_PER_TOKEN = 0.75
READER_TPOT_S = 60 / (READING_WPM / WORDS_PER_TOKEN)
TTFT_BUDGET = NumberLimit("TTFT budget (s)", 0.0, 3600, 1.0, low_open=True)
TPOT_BUDGET = NumberLimit("TPOT budget (s)", 0.0, 60, round(READER_TPOT_S, 6), low_open=True)


@dataclass(frozen=True)
class LatencyBudget:
    """How long a reply may make its reader wait: before text appears (ttft_s) and per token after that (tpot_s)."""

    ttft_s: float = float(TTFT_BUDGET.default)
    tpot_s: float = float(TPOT_BUDGET.default)

    def __post_init__(self) -> None:
        TTFT_BUDGET.check(self.ttft_s)
        TPOT_BUDGET.check(self.tpot_s)

    def to_dict(self) -> dict:
        return asdict(self)


MAX_NEW_TOKENS_LIMIT = int(MAX_NEW_TOKENS.high)
DTYPE_CHOICES = DTYPE.choices
DEVICE_CHOICES = DEVICE.choices
DECODE_LOOP_CHOICES = DECODE_LOOP.choices


@dataclass(frozen=True)
class GenerationSettings:
    """How to sample a reply. Temperature 0 means greedy decoding; seed None means a random one."""

    max_new_tokens: int = int(MAX_NEW_TOKENS.default)
    temperature: float = float(TEMPERATURE.default)
    top_p: float = float(TOP_P.default)
    seed: int | None = SEED.default
    decode_loop: str = DECODE_LOOP.default
    # Reuse the chat's keys and values from the last turn, prefilling only what is new (off: the whole
    # prompt every turn, to feel the difference).
    prompt_cache: bool = True
    speculation: str = SPECULATION.default  # "off", or how drafts are made ("ngram": prompt lookup)
    draft_tokens: int = int(DRAFT_TOKENS.default)  # at most this many drafts checked in one pass
    draft_model: str | None = None  # with speculation "draft": the smaller GGUF that drafts

    def __post_init__(self) -> None:
        validate_generation_settings(self)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def validate_generation_settings(settings: GenerationSettings) -> None:
    MAX_NEW_TOKENS.check(settings.max_new_tokens)
    TEMPERATURE.check(settings.temperature)
    if 0.0 < settings.temperature < MIN_SAMPLING_TEMPERATURE:
        raise InvalidSettingsError(
            f"temperature must be 0 (greedy) or at least {MIN_SAMPLING_TEMPERATURE:g}; got {settings.temperature!r}."
        )
    TOP_P.check(settings.top_p)
    if settings.seed is not None:
        SEED.check(settings.seed)
    DECODE_LOOP.check(settings.decode_loop)
    SPECULATION.check(settings.speculation)
    DRAFT_TOKENS.check(settings.draft_tokens)
    if settings.draft_model is not None and not isinstance(settings.draft_model, str):
        raise InvalidSettingsError(f"the draft model must be a file name; got {settings.draft_model!r}.")
    if settings.speculation == "draft" and not settings.draft_model:
        raise InvalidSettingsError("speculation with a draft model needs one: give its GGUF file (--draft-model).")
    if not isinstance(settings.prompt_cache, bool):
        raise InvalidSettingsError(f"prompt cache must be on or off (true or false); got {settings.prompt_cache!r}.")


def validate_decode_loop(loop: str) -> str:
    return DECODE_LOOP.check(loop)


def validate_dtype(dtype: str) -> str:
    # Read at call time: a precision added to DTYPE_CHOICES is accepted everywhere at once (the lab's test
    # of it swaps the tuple).
    return DTYPE.check(dtype, DTYPE_CHOICES)


def validate_device(device: str) -> str:
    return DEVICE.check(device)


def _is_number(value: object) -> TypeGuard[float]:
    # NaN fails every range check on its own, but bools would slip through as 0 and 1.
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _show(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000 else f"{value:g}"
