"""Open a GGUF in its own quantisation: clear refusals for bad files, the tokenizer from the verified cache."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ModelLoadError
from core.model.address_space import address_space_refusal
from core.model.gguf_cache import NATIVE_KIND, check_cache, write_verified_folder
from core.progress import ProgressCallback, scaled
from core.quant.gguf_header import GGUFHeader


@dataclass
class NativeModel:
    """A GGUF's model in its own quantisation, with the facts only the path that built it knows."""

    model: Any
    tokenizer: Any
    precision: str  # what the status bar shows, e.g. "native (Q4_K_M)"
    note: str | None  # how tensors without a kernel run, when some have none
    weight_bytes: int
    parameters: int  # counted from the weights, where the file's header does not say
    runtime: str  # what runs the layers when it is not transformers, else ""
    arithmetic: dict | None  # the shape the roofline counts


class NotNative(Exception):
    """The file is readable, but it has no native path here: load it the float way. reason says why."""

    def __init__(self, architecture: str, reason: str):
        super().__init__(reason)
        self.architecture = architecture
        self.reason = reason


def open_gguf(path: Path, header: GGUFHeader | None = None):
    """GGUFWeights for the file (from its header, when read already), or ModelLoadError saying in one line why it
    cannot be read."""
    from core.model.weight_count import gguf_header
    from core.quant.gguf_blocks import GGUFWeights

    header = header or gguf_header(path)
    try:
        return GGUFWeights(path, header)
    except ValueError as error:  # a tensor's extent the header's walk cannot judge (core/quant/gguf_blocks.py)
        raise ModelLoadError(f"the model file {path.name} is not a readable GGUF file: {_short(str(error))}.") from None
    except (OSError, MemoryError) as error:
        refusal = address_space_refusal(path, error)
        if refusal:
            raise ModelLoadError(refusal) from None
        raise ModelLoadError(
            f"the model file {path.name} is not a readable GGUF file (truncated or corrupt?): "
            f"{_short(str(error)) or type(error).__name__}."
        ) from None
    except (IndexError, KeyError, TypeError, OverflowError) as error:
        raise ModelLoadError(
            f"the model file {path.name} is not a readable GGUF file (truncated or corrupt?): "
            f"{_short(str(error)) or type(error).__name__}."
        ) from None


def check_architecture(path: Path, architecture: str | None) -> None:
    """Refuse an architecture neither the native path nor transformers' GGUF reader can build."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    if architecture not in GGUF_SUPPORTED_ARCHITECTURES or architecture in ("general", "tokenizer"):
        raise ModelLoadError(
            f"the GGUF file {path.name} holds a {architecture!r} model, an architecture Latency Lab "
            f"cannot run (Llama, Mistral, Qwen2/3, Phi-3, Gemma 2/3 and a few more can)."
        )


def load_native(path: Path, progress: ProgressCallback, header: GGUFHeader | None = None) -> NativeModel:
    """The model on the file's own quants: on the C kernels where they cover the file and can be built here,
    else (Llama files) on torch's int4 kernel; NotNative when neither covers it. header: the file's, read once
    per load (the walk refuses a truncated file or an unknown type in one line)."""
    from core.model.load_heap import heap_grown_in_large_steps

    with heap_grown_in_large_steps():
        return _load_native(path, progress, header)


def _load_native(path: Path, progress: ProgressCallback, header: GGUFHeader | None) -> NativeModel:
    from core.model.gguf_kernels import checked_shape, kernel_refusal
    from core.model.weight_count import gguf_header

    header = header or gguf_header(path)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="latencylab-load-helper") as pool:
        # One helper thread verifies the cache's files, then imports torch and transformers and opens the cached
        # tokenizer (a second and a half, nearly all of it holding the GIL), while this thread checks the weights
        # and packs them in C with the GIL released: the two halves of a launch overlap.
        checked = pool.submit(check_cache, path, scaled(progress, 0.0, 0.2), NATIVE_KIND, header.model_digest)
        prepared = pool.submit(_python_side, path, checked)
        weights = open_gguf(path, header)
        kernel_problem = kernel_refusal(weights)
        if kernel_problem:  # transformers' GGUF reader must cover it then, imported after the helper's imports
            prepared.result()
            check_architecture(path, weights.architecture)
        else:  # a shape fault is named as one, before the tokenizer's build reads the file
            checked_shape(weights)
        library = None if kernel_problem else _kernel_library(scaled(progress, 0.2, 0.3))
        if isinstance(library, str):
            library, kernel_problem = None, library
        if library is None:
            prepared.result()  # torch's int4 kernel's imports follow the helper's, never run beside them
            if weights.architecture not in _torch_int4_architectures():
                assert kernel_problem is not None  # there is no library only for a reason
                raise NotNative(weights.architecture, kernel_problem)
            build = None
        else:  # one core packs while the helper imports (on both, OpenMP's idle thread would spin against it);
            # what is left when the helper is done is packed after the load (core/model/idle_packing.py)
            with _quick_switches():
                build = _packed(library, weights, progress, prepared.done)
        check, tokenizer = prepared.result()
    tokenizer, config, cache_note = _tokenizer_and_config(
        path, check, scaled(progress, 0.3, 0.5), plain_config=library is not None, tokenizer=tokenizer
    )
    kind = weights.file_type() or _main_type(weights)
    if build is not None:
        return _on_kernels(library, build, weights, config, tokenizer, kind, cache_note)
    return _on_torch_int4(weights, config, tokenizer, kind, kernel_problem, scaled(progress, 0.5, 0.95), cache_note)


def _python_side(path: Path, checked):
    """(the cache check, its tokenizer when the cache is valid): the load's GIL-bound half, on the helper thread."""
    import torch  # noqa: F401 - the reply needs it; imported here, beside the packing
    from transformers.utils import logging as hf_logging

    from core.model.memory_check import ADDRESS_SPACE_MARGIN, check_headroom

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    check = checked.result()
    if not check.valid:
        return check, None
    check_headroom(ADDRESS_SPACE_MARGIN, f"opening {path.name}'s tokenizer")
    return check, _cached_tokenizer(check.folder)


@contextmanager
def _quick_switches():
    """The GIL handed over every 0.5 ms instead of 5: the packing thread wants it back briefly between matrices,
    and would otherwise wait out the helper's imports (2.43 s to a ready 7B against 2.57, five alternated runs)."""
    usual = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        yield
    finally:
        sys.setswitchinterval(usual)


def _torch_int4_architectures() -> tuple[str, ...]:
    from core.model.gguf_torch_int4 import NATIVE_ARCHITECTURES

    return NATIVE_ARCHITECTURES


def _packed(library, weights, progress: ProgressCallback, defer: Callable[[], bool]):
    """The weights mapped and packed for the kernels (those left when defer() turns true, later), or ModelLoadError
    naming a tensor they cannot take."""
    from core.model.gguf_kernels import build_kernel_model

    try:
        return build_kernel_model(library, weights, scaled(progress, 0.5, 0.95), threads=1, defer=defer)
    except (ValueError, RuntimeError) as error:  # a shape the kernels refuse, a tensor they cannot take
        raise ModelLoadError(f"the GGUF file's tensors do not fit its own metadata: {_short(str(error))}.") from None


def _kernel_library(progress: ProgressCallback):
    """The compiled kernels, or a one-line reason they cannot be had (or would be slow) on this machine."""
    from core.kernels.build import KernelsUnavailable, fast_here
    from core.kernels.library import kernels

    if not fast_here():
        return "the native GGUF kernels have SIMD code for AVX2 CPUs only, and this CPU has no AVX2"
    try:
        return kernels(progress=progress)
    except KernelsUnavailable as error:
        return str(error)


def _on_kernels(library, build, weights, config, tokenizer, kind: str, cache_note: str | None = None) -> NativeModel:
    from transformers import GenerationConfig

    from core.model.idle_packing import pack_when_idle
    from core.model.kernel_causal_lm import KernelCausalLM
    from core.model.memory_check import larger_than_memory_note

    model = KernelCausalLM(build, config, GenerationConfig.from_model_config(config))
    pack_when_idle(build.kernel)
    fallbacks, widened = build.fallbacks(), build.widened()
    notes = [library.note, cache_note, larger_than_memory_note(weights.path)]
    for name, wide in sorted(widened.items()):
        notes.append(
            f"{name} tensors run widened to {wide} (the same values; no {name} kernel yet, so more bytes a token)"
        )
    if fallbacks:
        notes.append(", ".join(sorted(fallbacks)) + " tensors run in float16 (no native kernel for them)")
    note = "; ".join(note for note in notes if note) or None
    return NativeModel(
        model, tokenizer, f"native ({kind})", note, model.weight_bytes, 0, model.runtime(), model.arithmetic()
    )


def _on_torch_int4(
    weights,
    config,
    tokenizer,
    kind: str,
    kernel_problem: str | None,
    progress: ProgressCallback,
    cache_note: str | None = None,
) -> NativeModel:
    from core.model.gguf_torch_int4 import build_native_model

    build = build_native_model(weights, config, progress)
    notes = [cache_note] if cache_note else []
    if kernel_problem:
        notes.append(f"{kernel_problem}, so it runs on torch's int4 kernel")
    fallbacks = build.fallbacks()
    if fallbacks:
        notes.append(", ".join(sorted(fallbacks)) + " tensors run in bfloat16 (no native kernel for them)")
    from core.model.arithmetic import arithmetic_facts
    from core.quant.apply import parameter_count, weight_bytes
    from core.settings import NATIVE_DTYPE

    model = build.model.eval()
    size = weight_bytes(model)
    facts = arithmetic_facts(model, size, NATIVE_DTYPE)
    return NativeModel(
        model, tokenizer, f"native ({kind})", "; ".join(notes) or None, size, parameter_count(model), "", facts
    )


def _main_type(weights) -> str:
    """The commonest weight type, for a file that does not say what it was made as."""
    from collections import Counter

    counts = Counter(weights.tensor_type(name) for name in weights.names() if weights.tensor_type(name) != "F32")
    return f"mostly {counts.most_common(1)[0][0]}" if counts else "GGUF"


def _tokenizer_and_config(path: Path, check, progress: ProgressCallback, plain_config: bool = False, tokenizer=None):
    """(tokenizer, config, a note when the cache cannot be written). plain_config: the C kernels take the shape from
    the GGUF itself, so they need only the config's plain values (context length, special tokens), not its class.
    tokenizer: the valid cache's, opened already."""
    from core.model.gguf_reads import shared_gguf_reads
    from core.model.memory_check import ADDRESS_SPACE_MARGIN, check_headroom

    if tokenizer is not None:
        return tokenizer, _cached_config(check.folder, plain_config), None
    check_headroom(ADDRESS_SPACE_MARGIN, f"building {path.name}'s tokenizer")

    if not check.valid:
        # Imported only here: the Auto classes import every family's mappings, half a second of each load.
        from transformers import AutoConfig, AutoTokenizer

        progress(0.0, "first launch: building the tokenizer from the GGUF (once)")
        with shared_gguf_reads():
            try:
                tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
            except Exception as error:  # any failure here is the file's vocabulary or template
                from core.model.vocabulary_fault import vocabulary_fault

                fault = vocabulary_fault(path)
                if fault:
                    raise ModelLoadError(f"the GGUF file {path.name}'s vocabulary cannot be read: {fault}.") from error
                raise ModelLoadError(
                    f"the GGUF file {path.name} has a vocabulary or chat template its tokenizer cannot be "
                    f"built from: {_short(str(error)).rstrip('.') or type(error).__name__}."
                ) from error
            config = AutoConfig.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)

        def save(staging: Path) -> None:
            tokenizer.save_pretrained(staging)
            config.save_pretrained(staging)

        progress(0.8, "first launch: writing the tokenizer cache")
        try:
            write_verified_folder(check.folder, check.gguf_sha256, path.name, save)
        except OSError as error:  # a read-only cache, or a file where its folder should be: use it unsaved
            progress(1.0, "the tokenizer cache cannot be written; using the tokenizer built now")
            return (
                tokenizer,
                config,
                (
                    f"the model cache ({check.folder.parent}) cannot be written "
                    f"({error.strerror or type(error).__name__}), so the tokenizer is built anew at "
                    f"each launch"
                ),
            )
    progress(1.0, "loading the tokenizer")
    return _cached_tokenizer(check.folder), _cached_config(check.folder, plain_config), None


def _cached_tokenizer(folder: Path):
    """The cache's tokenizer. One saved as the plain tokenizers backend (what transformers builds from a GGUF) is
    opened as that class directly: AutoTokenizer first imports the model family's config module, and with it
    torch.distributed, about 0.8 s of every launch."""
    import json

    from transformers import TokenizersBackend

    try:
        saved = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        saved = None
    if saved == TokenizersBackend.__name__:
        return TokenizersBackend.from_pretrained(folder, local_files_only=True)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def _cached_config(folder: Path, plain: bool):
    """The cache's config: its family's class, or (plain) its values on the base class, which skips importing
    the family's modules (the same 0.8 s as above)."""
    from transformers import PretrainedConfig

    if plain:
        return PretrainedConfig.from_pretrained(folder, local_files_only=True)
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(folder, local_files_only=True)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."
