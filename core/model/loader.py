"""Load a causal language model and its tokenizer from the embedded GGUF, a folder or a hub id."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from core.compute_thread import on_compute_thread
from core.errors import InvalidSettingsError, ModelLoadError
from core.model.facts import ModelFacts
from core.model.gguf_cache import check_cache, convert
from core.model.preflight import check_source_before_loading
from core.model.source import ModelSource, resolve_model_source, with_header
from core.model.transformers_index import keep_transformers_index
from core.progress import ProgressCallback, never_backwards, no_progress, scaled
from core.settings import DTYPE, NATIVE_DTYPE, QUANTISED_DTYPES, validate_device, validate_dtype

log = logging.getLogger(__name__)

# Used only when neither the config nor the tokenizer states a context length.
FALLBACK_CONTEXT_WINDOW = 2048
MAX_CONTEXT_WINDOW = 10_000_000  # past this a context length is a broken header, not a model's


@dataclass
class LoadedModel:
    """A model ready to generate, with the facts the status bar and exports show."""

    model: Any
    tokenizer: Any
    source: ModelSource
    dtype: str
    device: str
    context_window: int
    parameter_count: int
    weight_bytes: int
    eos_token_ids: frozenset[int] = field(default_factory=frozenset)
    precision: str = ""  # what people see, e.g. "native (Q4_K_M)"; the dtype itself when empty
    precision_note: str | None = None  # a fallback worth knowing, e.g. tensors without a native kernel
    runtime: str = ""  # what runs the layers when it is not transformers, e.g. "Latency Lab's C kernels (avx2)"
    arithmetic: dict | None = None  # the shape the roofline counts FLOPs and bytes from (core/model/arithmetic.py)
    context_note: str | None = None  # why the context window is a guess, when the model's files give none usable

    @property
    def notice(self) -> str | None:
        """What the user should know at load, said once (a server's model has its own); the rest is in its facts."""
        return self.context_note

    @property
    def is_remote(self) -> bool:
        return False

    @property
    def name(self) -> str:
        return self.source.display_name

    def close(self) -> None:
        """Nothing to let go of now: the weights go with the last reference (the window may still show facts)."""

    def release(self) -> None:
        """Free the weights now, for an owner done with them (a lab sweep between its models): the C kernels' model
        goes at once instead of when a collection finds it. Later calls into it raise "the model is closed"."""
        free = getattr(self.model, "close", None)  # the kernels' model has one; a transformers module has none
        if free is not None:
            free()

    def serves(self, spec: str | None, dtype: str, device: str) -> bool:
        """Whether loading spec at dtype on device would give these weights (a race may reuse the chat's model)."""
        from core.errors import LatencyLabError
        from core.model.source import resolve_model_source

        try:
            return (self.dtype, self.device) == (dtype, device) and resolve_model_source(spec) == self.source
        except LatencyLabError:
            return False

    def end_suppressors(self) -> tuple:
        """Logits processors that keep the reply from ending, for a reply of exactly max new tokens (benchmarks)."""
        if not self.eos_token_ids:
            return ()
        from core.model.end_suppression import SuppressEnds

        return (SuppressEnds(self.eos_token_ids),)

    def position_logits(self, ids: Sequence[int]) -> Any:
        """Teacher-forced logits of every position of one sequence, a [n, vocab] tensor: what quality checks compare.
        On the C kernels it uses the model's KV cache: run it on the thread that generates, between replies."""
        import torch

        from core.model.kernel_causal_lm import KernelCausalLM

        if isinstance(self.model, KernelCausalLM):  # the kernels' own pass; transformers' forward otherwise
            return torch.from_numpy(self.model.position_logits(ids))
        with torch.inference_mode():
            return self.model(torch.tensor([list(ids)], device=self.device)).logits[0]

    def describe(self) -> ModelFacts:
        return ModelFacts(
            model=self.name,
            dtype=self.precision or self.dtype,
            device=self.device,
            parameters=self.parameter_count,
            weight_bytes=self.weight_bytes,
            context_window=self.context_window,
            precision_note=self.precision_note or None,
            runtime=self.runtime or None,
            arithmetic=self.arithmetic or None,
            notice=self.notice,
        )


def load_model(
    spec: str | None = None,
    *,
    device: str = "cpu",
    dtype: str = DTYPE.default,
    progress: ProgressCallback = no_progress,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
) -> LoadedModel:
    """Load a model, or raise ModelLoadError saying what was tried and why it failed.

    The preflight (a pickle-only folder, a model larger than free memory) runs first, so every caller
    gets it. The work runs on the compute thread, where the model will also generate
    (core/compute_thread.py).
    """
    return on_compute_thread(lambda: _load_model(spec, device, dtype, progress, trust_remote_code, allow_pickle))


def _load_model(
    spec: str | None, device: str, dtype: str, progress: ProgressCallback, trust_remote_code: bool, allow_pickle: bool
) -> LoadedModel:
    try:
        validate_dtype(dtype)
        validate_device(device)
    except InvalidSettingsError as error:
        raise ModelLoadError(str(error)) from None
    keep_transformers_index()  # before any path imports transformers
    source = resolve_model_source(spec)
    # Every path hashes the file on a helper thread beside the main steps, and a GGUF the native path
    # cannot run starts again on float32: one bar for the whole load, that only moves forward.
    progress = never_backwards(progress)
    progress(0.0, f"loading {source.display_name}")
    try:
        source = with_header(source)  # the GGUF's header, read once: every later step takes it from the source
        check_source_before_loading(source, dtype, allow_pickle)
        refused = device_problem(device, dtype, source.kind)
        if refused:
            raise ModelLoadError(f"tried to load on {device}, but {refused[0]}; {refused[1]}.")
        if trust_remote_code:
            log.warning("trust_remote_code is on: the model folder may run its own Python code.")
        loaded = _load(source, device, dtype, progress, trust_remote_code, allow_pickle)
    except ModelLoadError:
        raise
    except (MemoryError, RuntimeError) as error:
        if isinstance(error, MemoryError) or "out of memory" in str(error).lower():
            raise ModelLoadError(
                f"tried to load {source.display_name} ({dtype}, {device}), but ran out of memory: {_short(error)}"
            ) from error
        raise ModelLoadError(_failure(source, error)) from error
    except Exception as error:  # any loader failure must become one clear error type
        raise ModelLoadError(_failure(source, error)) from error
    progress(1.0, "model ready")
    return loaded


def device_problem(device: str, dtype: str, kind: str) -> tuple[str, str] | None:
    """(why the model cannot load on device in dtype, what to do instead), or None where it can. kind: its source's,
    "gguf" or a folder's."""
    if device != "cuda":
        return None
    import torch

    if not torch.cuda.is_available():
        return "this machine has no CUDA device", "use --device cpu"
    if dtype in QUANTISED_DTYPES or dtype == NATIVE_DTYPE and kind == "gguf":
        return f"the {dtype} layers use torch's CPU kernels", "use --device cpu or a float dtype"
    return None


def _load(
    source: ModelSource,
    device: str,
    dtype: str,
    progress: ProgressCallback,
    trust_remote_code: bool,
    allow_pickle: bool,
) -> LoadedModel:
    if dtype != NATIVE_DTYPE:
        return _load_converted(source, device, dtype, progress, trust_remote_code, allow_pickle)
    if source.kind == "gguf":
        from core.model.native_load import NotNative

        try:
            return _load_native(source, progress)
        except NotNative as other:
            note = f"{other.reason}, so it was dequantised to float32"
    else:
        note = None  # a folder's weights are float already
    loaded = _load_converted(source, device, "float32", progress, trust_remote_code, allow_pickle)
    loaded.dtype, loaded.precision, loaded.precision_note = NATIVE_DTYPE, "native (float32)", note
    return loaded


def _load_native(source: ModelSource, progress: ProgressCallback) -> LoadedModel:
    from core.model.native_load import load_native
    from core.model.weight_count import gguf_parameter_count

    gguf_file = source.gguf_file
    assert gguf_file is not None  # a "gguf" source names its file
    native = load_native(gguf_file, progress, source.header)
    return LoadedModel(
        model=native.model,
        tokenizer=native.tokenizer,
        source=source,
        dtype=NATIVE_DTYPE,
        device="cpu",
        context_window=_context_window(native.model, native.tokenizer),
        context_note=_context_note(native.model, native.tokenizer),
        parameter_count=gguf_parameter_count(gguf_file, source.header) or native.parameters,
        weight_bytes=native.weight_bytes,
        eos_token_ids=_eos_ids(native.model, native.tokenizer),
        precision=native.precision,
        precision_note=native.note,
        runtime=native.runtime,
        arithmetic=native.arithmetic,
    )


def _load_converted(
    source: ModelSource,
    device: str,
    dtype: str,
    progress: ProgressCallback,
    trust_remote_code: bool,
    allow_pickle: bool,
) -> LoadedModel:
    """The float (and int8/int4) path: transformers loads float weights, from the converted-model cache for a GGUF."""
    location: str | Path = source.location
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="latencylab-cache-check") as pool:
        # Hashing and checksumming the cache release the GIL, so they overlap the slow imports.
        cache_progress = scaled(progress, 0.0, 0.7)
        gguf_file = source.gguf_file if source.kind == "gguf" else None
        checked = pool.submit(check_cache, gguf_file, cache_progress) if gguf_file is not None else None
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from core.model.arithmetic import arithmetic_facts
        from core.quant.apply import parameter_count, weight_bytes

        # Our own progress callback reports these phases; transformers' bars and notices would
        # interleave with a CLI's stdout and mean nothing in the window.
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if gguf_file is not None and checked is not None:
            check = checked.result()
            if not check.valid:
                convert(gguf_file, check, cache_progress)
            location = check.folder

    local_only = True  # Latency Lab does not download: resolve_model_source refuses a hub id not in the cache
    common = {"trust_remote_code": trust_remote_code}
    progress(0.72, "loading the tokenizer")
    tokenizer = _from_pretrained(AutoTokenizer, location, local_only, common)
    progress(0.78, "loading the weights")
    float_dtype = torch.float32 if dtype in QUANTISED_DTYPES else getattr(torch, dtype)
    model = _from_pretrained(
        AutoModelForCausalLM,
        location,
        local_only,
        {**common, "dtype": float_dtype, "use_safetensors": None if allow_pickle else True},
    )
    logical_parameters = parameter_count(model)
    if dtype in QUANTISED_DTYPES:
        progress(0.88, f"packing the weights as {dtype}")
        _quantize(model, dtype, source)
    progress(0.95, f"moving the model to {device}")
    model = model.to(device).eval()
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        source=source,
        dtype=dtype,
        device=device,
        context_window=_context_window(model, tokenizer),
        context_note=_context_note(model, tokenizer),
        parameter_count=logical_parameters,
        weight_bytes=weight_bytes(model),
        eos_token_ids=_eos_ids(model, tokenizer),
        arithmetic=arithmetic_facts(model, weight_bytes(model), dtype),
    )


def _quantize(model: Any, dtype: str, source: ModelSource) -> None:
    from core.quant.apply import quantize_int4, quantize_int8

    if dtype == "int4":
        quantize_int4(model, source.gguf_file if source.kind == "gguf" else None)
    else:
        quantize_int8(model)


def _from_pretrained(auto_class: Any, location: str | Path, local_only: bool, kwargs: dict) -> Any:
    """Prefer files already on this machine; reach for the hub only for an id that is not cached."""
    try:
        return auto_class.from_pretrained(location, local_files_only=True, **kwargs)
    except OSError as local_error:
        if local_only or _offline():
            raise ModelLoadError(
                f"tried to load {str(location)!r} from files on this machine (offline), but: {_short(local_error)}"
            ) from local_error
        try:
            return auto_class.from_pretrained(location, **kwargs)
        except Exception as remote_error:
            raise ModelLoadError(
                f"tried to load {str(location)!r} from the local cache ({_short(local_error)}) "
                f"and then from the Hugging Face hub ({_short(remote_error)})."
            ) from remote_error


def _offline() -> bool:
    import os

    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def _usable_context(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and 0 < value < MAX_CONTEXT_WINDOW


def _context_window(model: Any, tokenizer: Any) -> int:
    for value in (getattr(model.config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)):
        if _usable_context(value):
            return value
    return FALLBACK_CONTEXT_WINDOW


def _context_note(model: Any, tokenizer: Any) -> str | None:
    """A line when the model's own context length is missing or cannot be right (a GGUF's 0 or 2^62), so the window
    used is not the model's: said, not silently replaced."""
    value = getattr(model.config, "max_position_embeddings", None)
    if _usable_context(value):
        return None
    given = "gives none" if value is None else f"gives {value:,}" if isinstance(value, int) else f"gives {value!r}"
    return f"the model's context length is not usable (its config {given}); the context window is taken as {_context_window(model, tokenizer):,} positions"


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(v for v in value if isinstance(v, int))
    return frozenset(ids)


def _failure(source: ModelSource, error: BaseException) -> str:
    what = {"gguf": "the GGUF file", "folder": "the model folder", "hub": "the hub id"}[source.kind]
    return f"tried to load {what} {source.location!r}, but: {_short(error)}"


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
