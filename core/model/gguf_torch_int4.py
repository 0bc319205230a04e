"""Native precision on torch's int4 kernel: a Llama-architecture model built straight from a GGUF's quant blocks, no float32 copy.

The skeleton is made on the meta device (accelerate's init_empty_weights), so no float weight is ever
allocated; each weight is then decoded from the file's blocks a chunk of rows at a time and packed for
the int4 kernel. Peak memory stays near the file's size.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from core.errors import ModelLoadError
from core.progress import ProgressCallback
from core.quant.bf16_linear import BFloat16Linear
from core.quant.block_embedding import BlockEmbedding
from core.quant.gguf_blocks import GGUFWeights, gguf_name_for
from core.quant.gguf_decode import NATIVE_TYPES, PLANE_COUNT, decode
from core.quant.int_groups import IntGroups
from core.quant.split_int4_linear import fits_int4_kernel, native_linear_in_chunks

# Architectures whose tensors this module maps onto transformers' modules (Mistral files say "llama").
NATIVE_ARCHITECTURES = ("llama",)
FLOAT_TYPES = ("F32", "F16")

_NORMS = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}


@dataclass
class NativeBuild:
    """The model, and how each tensor type in it runs: 'native', 'float32' or 'bfloat16' (no kernel here)."""

    model: Any
    file_type: str | None
    paths: dict[str, str] = field(default_factory=dict)

    def fallbacks(self) -> dict[str, str]:
        return {qtype: path for qtype, path in self.paths.items() if path == "bfloat16"}


def build_native_model(weights: GGUFWeights, config: Any, progress: ProgressCallback) -> NativeBuild:
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    build = NativeBuild(model, weights.file_type())
    targets = _targets(model, weights)
    with _one_thread():
        _fill(model, weights, targets, build, progress)
    # The head and embedding are separate modules now (one may be packed, the other blocks): stop
    # transformers from tying them back into one Parameter.
    model.config.tie_word_embeddings = False
    if hasattr(model, "_tied_weights_keys"):
        model._tied_weights_keys = None
    left = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left:
        raise ModelLoadError(
            f"the GGUF file has no tensor for {', '.join(left[:3])}; it does not match its own config."
        )
    return build


@contextmanager
def _one_thread():
    """Packing is hundreds of small torch ops; on a busy two-core machine each op's thread-pool hand-off
    cost 30 times the op itself (12 vs 0.35 ms a concatenation), so they run on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _fill(
    model: Any, weights: GGUFWeights, targets: list[tuple[str, str]], build: NativeBuild, progress: ProgressCallback
) -> None:
    for index, (module_name, gguf_name) in enumerate(targets):
        progress(index / len(targets), f"packing {gguf_name} ({weights.tensor_type(gguf_name)})")
        module = model.get_submodule(module_name)
        _check_shape(weights, gguf_name, module)
        if isinstance(module, nn.Linear):
            _replace(model, module_name, _linear(weights, gguf_name, build.paths))
        elif isinstance(module, nn.Embedding):
            model.set_input_embeddings(_embedding(weights, gguf_name, build.paths))
        else:  # a norm: its weight is a small float vector
            module.weight = nn.Parameter(weights.dequantized(gguf_name), requires_grad=False)


def _targets(model: Any, weights: GGUFWeights) -> list[tuple[str, str]]:
    """(module name, GGUF tensor name) for every module that holds a weight."""
    names = set(weights.names())
    targets = []
    for module_name, module in model.named_modules():
        if not any(True for _ in module.parameters(recurse=False)):
            continue
        gguf_name = _gguf_name(module_name, names)
        if gguf_name is None or gguf_name not in names:
            raise ModelLoadError(
                f"the GGUF file has no tensor {gguf_name or module_name!r}, which a {weights.architecture} model needs."
            )
        targets.append((module_name, gguf_name))
    return targets


def _gguf_name(module_name: str, names: set[str]) -> str | None:
    if module_name == "lm_head":
        return "output.weight" if "output.weight" in names else "token_embd.weight"  # tied when absent
    if module_name == "model.embed_tokens":
        return "token_embd.weight"
    if module_name == "model.norm":
        return "output_norm.weight"
    parts = module_name.split(".")
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in _NORMS:
        return f"blk.{parts[2]}.{_NORMS[parts[3]]}.weight"
    return gguf_name_for(module_name)


def _check_shape(weights: GGUFWeights, gguf_name: str, module: nn.Module) -> None:
    expected = tuple(next(module.parameters(recurse=False)).shape)
    found = weights.shape(gguf_name)
    if len(expected) == 1:
        found = (int(np.prod(found)),)
    if found != expected:
        raise ModelLoadError(
            f"the GGUF tensor {gguf_name} has shape {found}, but the file's own config calls for {expected}."
        )


def _linear(weights: GGUFWeights, gguf_name: str, paths: dict[str, str]) -> nn.Module:
    qtype = weights.known_tensor_type(gguf_name)
    rows, columns = weights.shape(gguf_name)
    if qtype in NATIVE_TYPES and fits_int4_kernel(rows, columns):
        paths[qtype] = "native"
        raw = weights.raw(gguf_name)
        groups_of = _row_reader(weights, gguf_name, raw, qtype)
        return native_linear_in_chunks(groups_of, rows, PLANE_COUNT[qtype])
    weight = weights.dequantized(gguf_name)
    if qtype in FLOAT_TYPES:
        paths[qtype] = "float32"  # exact: these are floats already
        layer = nn.Linear(columns, rows, bias=False)
        layer.weight = nn.Parameter(weight, requires_grad=False)
        return layer
    paths[qtype] = "bfloat16"
    return BFloat16Linear(weight)


def _row_reader(weights: GGUFWeights, gguf_name: str, raw: np.ndarray, qtype: str):
    """rows_of(start, end) in Hugging Face row order: q and k rows of a Llama file are permuted in the file."""
    order = weights.llama_row_order(gguf_name, raw.shape[0])

    def rows_of(start: int, end: int) -> IntGroups:
        picked = raw[start:end] if order is None else raw[order[start:end].numpy()]
        return decode(np.asarray(picked), qtype)

    return rows_of


def _embedding(weights: GGUFWeights, gguf_name: str, paths: dict[str, str]) -> nn.Module:
    qtype = weights.known_tensor_type(gguf_name)
    vocab, width = weights.shape(gguf_name)
    if qtype in NATIVE_TYPES:
        paths.setdefault(qtype, "native")
        return BlockEmbedding(np.array(weights.raw(gguf_name)), qtype, width)  # a copy: the file may change later
    paths.setdefault(qtype, "float32")
    return nn.Embedding.from_pretrained(weights.dequantized(gguf_name), freeze=True)


def _replace(model: nn.Module, dotted_name: str, replacement: nn.Module) -> None:
    parent_name, _, child_name = dotted_name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child_name, replacement)
