"""The chosen model's figures from its files' headers alone, nothing loaded: weight bytes, context length, the
KV cache that context needs, and the shape the roofline counts a decode step's bytes from."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import ModelLoadError
from core.model.memory_check import estimated_load_bytes
from core.model.source import ModelSource
from core.roofline.counts import ArithmeticShape
from core.settings import NATIVE_DTYPE

# Bytes a weight takes once converted to these dtypes; int8 and int4 add per-group scales, so are not estimated here.
CONVERTED_WEIGHT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class ModelFigures:
    name: str
    kind: str  # gguf or folder
    file: Path | None = None  # the GGUF a load maps: its pages are the ones the page cache keeps
    file_bytes: int | None = None
    parameters: int | None = None
    file_type: str | None = None  # e.g. Q4_1
    context: int | None = None
    shape: ArithmeticShape | None = None  # the decode step's bytes, as loaded in the chosen dtype
    load_bytes: int | None = None  # memory the weights take once loaded (a mapped file: its own bytes)
    tensor_types: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)

    @property
    def weight_bytes(self) -> int | None:
        return self.shape.weight_bytes if self.shape else None

    def kv_bytes_per_token(self) -> int | None:
        return self.shape.cache_bytes_per_position() * self.shape.layers if self.shape else None

    def kv_bytes_at_context(self) -> int | None:
        per_token = self.kv_bytes_per_token()
        return per_token * self.context if per_token is not None and self.context else None


def gguf_figures(source: ModelSource, dtype: str) -> ModelFigures:
    """From the header (read once, source.header) and the tensor table: ModelLoadError for a file that cannot be
    read, in the loader's own words."""
    from core.model.gguf_kernels import read_shape, runs_on_kernels
    from core.model.native_load import open_gguf

    path, header = source.gguf_file, source.header
    if path is None or header is None:
        raise ModelLoadError(f"{source.display_name} has no GGUF header read")
    weights = open_gguf(path, header)
    arch = weights.architecture
    context = header.fields.get(f"{arch}.context_length")
    figures = ModelFigures(
        source.display_name,
        "gguf",
        file=path,
        file_bytes=path.stat().st_size,
        parameters=header.parameter_count,
        file_type=weights.file_type(),
        context=context if _positive_int(context) else None,
        tensor_types=frozenset(filter(None, (weights.tensor_type(name) for name in weights.names()))),
    )
    on_kernels = dtype == NATIVE_DTYPE and runs_on_kernels(path, header)
    try:
        model_shape = read_shape(weights)
    except (ModelLoadError, KeyError) as problem:
        note = str(problem) if isinstance(problem, ModelLoadError) else f"the kernels do not know {arch} models"
        return replace(figures, load_bytes=_load_bytes(source, dtype), notes=[f"its shape is not counted: {note}"])
    embedding = weights.raw("token_embd.weight").nbytes
    tied = "output.weight" not in weights.names()
    if dtype == NATIVE_DTYPE:
        weight_bytes = sum(weights.raw(name).nbytes for name in weights.names())
        embedding_bytes = 0 if tied else embedding
    elif dtype in CONVERTED_WEIGHT_BYTES:
        weight_bytes = header.parameter_count * CONVERTED_WEIGHT_BYTES[dtype]
        rows = math.prod(header.tensors["token_embd.weight"].dims)
        embedding_bytes = 0 if tied else rows * CONVERTED_WEIGHT_BYTES[dtype]
    else:
        return replace(
            figures,
            load_bytes=_load_bytes(source, dtype),
            notes=[f"the bytes a step reads once converted to {dtype} are not estimated here (per-group scales)"],
        )
    shape = ArithmeticShape(
        layers=model_shape.layers,
        width=model_shape.width,
        heads=model_shape.heads,
        kv_heads=model_shape.kv_heads,
        head_dim=model_shape.head_dim,
        ffn=model_shape.ffn,
        vocab=model_shape.vocab,
        weight_bytes=weight_bytes,
        embedding_bytes=embedding_bytes,
        windows=tuple(model_shape.windows),
        cache_value_bytes=cache_value_bytes(dtype, on_kernels),
    )
    return replace(figures, shape=shape, load_bytes=_load_bytes(source, dtype))


def cache_value_bytes(dtype: str, on_kernels: bool) -> int:
    """One cached key or value element: float16 on the kernels; on transformers' layers as arithmetic.py counts."""
    if on_kernels:
        return 2
    return 4 if dtype in ("float32", "int8", NATIVE_DTYPE) else 2


def _load_bytes(source: ModelSource, dtype: str) -> int | None:
    """What the weights take in memory once loaded: the loader's own estimate (memory_check.py), or, for a file the
    kernels map, its own bytes (held in the page cache, not allocated)."""
    estimated = estimated_load_bytes(source, dtype)
    if estimated is None and source.gguf_file is not None and dtype == NATIVE_DTYPE:
        return source.gguf_file.stat().st_size
    return estimated


def folder_figures(source: ModelSource, folder: Path, dtype: str) -> ModelFigures:
    """A safetensors folder: its config.json (read as untrusted JSON) and its tensors' element count."""
    from core.model.weight_count import safetensors_parameter_count

    parameters = safetensors_parameter_count(folder)
    figures = ModelFigures(source.display_name, "folder", parameters=parameters)
    try:
        config = json.loads((folder / "config.json").read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):
        return replace(figures, notes=["its config.json could not be read"])
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    context = config.get("max_position_embeddings")
    figures = replace(figures, context=context if _positive_int(context) else None)
    layers, width, heads, ffn, vocab = (
        _whole(config, key)
        for key in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
    )
    bytes_each = CONVERTED_WEIGHT_BYTES.get(dtype)
    if not (layers and width and heads and ffn and vocab) or parameters is None or bytes_each is None:
        why = f"once converted to {dtype}" if bytes_each is None else "from its config.json"
        return replace(figures, load_bytes=_load_bytes(source, dtype), notes=[f"its shape is not counted {why}"])
    tied = bool(config.get("tie_word_embeddings", False))
    shape = ArithmeticShape(
        layers=layers,
        width=width,
        heads=heads,
        kv_heads=_whole(config, "num_key_value_heads") or heads,
        head_dim=_whole(config, "head_dim") or width // heads,
        ffn=ffn,
        vocab=vocab,
        weight_bytes=parameters * bytes_each,
        embedding_bytes=0 if tied else vocab * width * bytes_each,
        cache_value_bytes=cache_value_bytes(dtype, False),
    )
    return replace(figures, shape=shape, load_bytes=_load_bytes(source, dtype))


def hub_snapshot(hub_id: str) -> Path | None:
    """The newest downloaded snapshot folder of a hub id in the Hugging Face cache, or None."""
    from core.model.hub_cache import hub_cache_folder

    snapshots = hub_cache_folder() / ("models--" + hub_id.replace("/", "--")) / "snapshots"
    try:
        folders = [entry for entry in snapshots.iterdir() if entry.is_dir()]
    except OSError:
        return None
    return max(folders, key=lambda entry: entry.stat().st_mtime, default=None)


def model_figures(source: ModelSource, dtype: str) -> ModelFigures:
    """The figures of a resolved local source (its GGUF header read: with_header); ModelLoadError for a bad file."""
    if source.kind == "gguf":
        return gguf_figures(source, dtype)
    folder = Path(source.location) if source.kind == "folder" else hub_snapshot(source.location)
    if folder is None:
        return ModelFigures(source.display_name, source.kind, notes=["its snapshot folder was not found"])
    return folder_figures(replace(source, kind="folder", location=str(folder)), folder, dtype)


def _whole(config: dict, key: str) -> int | None:
    """A positive whole number from an untrusted config, or None."""
    value = config.get(key)
    return value if isinstance(value, int) and _positive_int(value) else None


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**40
