"""Open a GGUF in its own quantisation: clear refusals for bad files, the tokenizer from the verified cache."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import ModelLoadError
from core.model.gguf_cache import NATIVE_KIND, check_cache, write_verified_folder
from core.progress import ProgressCallback, scaled


@dataclass
class NativeModel:
    model: Any
    tokenizer: Any
    precision: str  # what the status bar shows, e.g. "native (Q4_K_M)"
    note: str | None  # how tensors without a kernel run, when some have none


class NotNative(Exception):
    """The file is readable, but its architecture has no native layers here: load it the float way."""

    def __init__(self, architecture: str):
        super().__init__(architecture)
        self.architecture = architecture


def open_gguf(path: Path):
    """GGUFWeights for the file, or ModelLoadError saying in one line why it cannot be read."""
    from core.quant.gguf_blocks import GGUFWeights

    try:
        return GGUFWeights(path)
    except ValueError as error:
        text = str(error)
        if "GGMLQuantizationType" in text:
            raise ModelLoadError(f"the model file {path.name} uses a quant type this app does not know "
                                 f"({text.split(' is not')[0]} is not a GGML type id): it may need a newer version.") from None
        raise ModelLoadError(f"the model file {path.name} is not a readable GGUF file: {_short(text)}.") from None
    except (OSError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as error:
        raise ModelLoadError(f"the model file {path.name} is not a readable GGUF file (truncated or corrupt?): "
                             f"{_short(str(error)) or type(error).__name__}.") from None


def check_architecture(path: Path, architecture: str | None) -> None:
    """Refuse an architecture neither the native path nor transformers' GGUF reader can build."""
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    if architecture not in GGUF_SUPPORTED_ARCHITECTURES or architecture in ("general", "tokenizer"):
        raise ModelLoadError(f"the GGUF file {path.name} holds a {architecture!r} model, an architecture Latency Lab "
                             f"cannot run (Llama, Mistral, Qwen2/3, Phi-3, Gemma 2/3 and a few more can).")


def load_native(path: Path, progress: ProgressCallback) -> NativeModel:
    """The model on the file's own quants; NotNative for an architecture other than Llama's."""
    from core.model.gguf_native import NATIVE_ARCHITECTURES, build_native_model
    from core.model.weight_count import gguf_parameter_count

    gguf_parameter_count(path)  # the header walk refuses a truncated file or an unknown type in one line
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="latencylab-cache-check") as pool:
        # Hashing releases the GIL, so it overlaps reading the header and the slow imports.
        checked = pool.submit(check_cache, path, scaled(progress, 0.0, 0.2), NATIVE_KIND)
        weights = open_gguf(path)
        check_architecture(path, weights.architecture)
        if weights.architecture not in NATIVE_ARCHITECTURES:
            raise NotNative(weights.architecture)
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        check = checked.result()
    tokenizer, config = _tokenizer_and_config(path, check, scaled(progress, 0.2, 0.4))
    build = build_native_model(weights, config, scaled(progress, 0.4, 0.95))
    kind = build.file_type or _main_type(weights)
    fallbacks = build.fallbacks()
    note = (", ".join(sorted(fallbacks)) + " tensors run in bfloat16 (no native kernel for them)") if fallbacks else None
    return NativeModel(build.model.eval(), tokenizer, f"native ({kind})", note)


def _main_type(weights) -> str:
    """The commonest weight type, for a file that does not say what it was made as."""
    from collections import Counter

    counts = Counter(weights.tensor_type(name) for name in weights.names() if weights.tensor_type(name) != "F32")
    return f"mostly {counts.most_common(1)[0][0]}" if counts else "GGUF"


def _tokenizer_and_config(path: Path, check, progress: ProgressCallback):
    from transformers import AutoConfig, AutoTokenizer

    if not check.valid:
        progress(0.0, "first launch: building the tokenizer from the GGUF (once)")
        try:
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        except Exception as error:  # noqa: BLE001 - any failure here is the file's vocabulary or template
            raise ModelLoadError(f"the GGUF file {path.name} has a vocabulary or chat template its tokenizer cannot be "
                                 f"built from: {_short(str(error)) or type(error).__name__}.") from error
        config = AutoConfig.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)

        def save(staging: Path) -> None:
            tokenizer.save_pretrained(staging)
            config.save_pretrained(staging)

        progress(0.8, "first launch: writing the tokenizer cache")
        write_verified_folder(check.folder, check.gguf_sha256, path.name, save)
    progress(1.0, "loading the tokenizer")
    return (AutoTokenizer.from_pretrained(check.folder, local_files_only=True),
            AutoConfig.from_pretrained(check.folder, local_files_only=True))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."
