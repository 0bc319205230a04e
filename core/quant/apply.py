"""Swap a float model's Linear layers for quantised ones, and count the bytes a decode step reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.quant.groupwise import GROUP_SIZE, PACK_ROWS, quantize_q4_groups
from core.quant.int4_linear import Int4Linear
from core.quant.int8_linear import Int8Embedding, Int8Linear
from core.quant.q8_head import Q8Embedding, Q8Head, quantize_q8_groups


def quantize_int4(model: nn.Module, gguf_path: Path | None = None) -> dict:
    """Replace every decoder Linear by Int4Linear.

    With a Q4_1 GGUF the file's own quants and scales are used, so nothing is re-rounded; other
    models are rounded onto the same grid. The LM head, tied to the embedding in SmolLM2 (Q8_0 in
    the file), stays on the Q8_0 grid (core/quant/q8_head.py), run as two int4 products that share the
    group scales: 4 bits there would cost accuracy for little time.
    Returns how many layers came from the file and how many were rounded here.
    """
    weights = None
    if gguf_path is not None:
        from core.quant.gguf_blocks import GGUFWeights

        weights = GGUFWeights(gguf_path)
    from core.quant.gguf_blocks import gguf_name_for

    counts = {"from_file": 0, "rounded_here": 0, "q8_head": 0}
    for name, module in list(model.named_modules()):
        if not isinstance(module, nn.Linear) or name.endswith("lm_head"):
            continue
        if module.in_features % GROUP_SIZE or module.out_features % PACK_ROWS:
            continue  # the kernel's tiling needs these multiples; such a layer stays in float
        gguf_name = gguf_name_for(name)
        if weights is not None and gguf_name and weights.tensor_type(gguf_name) == "Q4_1":
            groups = weights.q4_1(gguf_name)
            counts["from_file"] += 1
        else:
            groups = quantize_q4_groups(module.weight)
            counts["rounded_here"] += 1
        _replace(model, name, Int4Linear(groups, module.bias))
    counts["q8_head"] = _quantize_head(model, bits=4)
    return counts


def quantize_int8(model: nn.Module) -> int:
    """Replace every Linear, the LM head included, by per-channel int8 weight-only layers."""
    replaced = _quantize_head(model, bits=8)
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear):
            _replace(model, name, Int8Linear(module.weight, module.bias))
            replaced += 1
    return replaced


def _quantize_head(model: nn.Module, bits: int) -> int:
    """Quantise the LM head; when the embedding shares its weight, quantise that with it."""
    head = getattr(model, "lm_head", None)
    if not isinstance(head, nn.Linear) or head.bias is not None:
        return 0
    if bits == 4 and (head.in_features % GROUP_SIZE or head.out_features % PACK_ROWS):
        return 0
    embedding = model.get_input_embeddings()
    tied = embedding is not None and embedding.weight is head.weight
    if bits == 4:
        groups = quantize_q8_groups(head.weight)
        model.lm_head = Q8Head(groups)
        if tied:
            model.set_input_embeddings(Q8Embedding(groups, getattr(embedding, "embed_scale", None)))
    else:
        model.lm_head = Int8Linear(head.weight)
        if tied:
            # One table serves both ends, as in the GGUF: a float copy would double the bytes held.
            model.set_input_embeddings(Int8Embedding(model.lm_head, getattr(embedding, "embed_scale", None)))
    _untie(model)
    return 1


def _untie(model: Any) -> None:  # a transformers model: torch types its config as a tensor or module
    # The head no longer shares a Parameter with the embedding; stop transformers from re-tying them.
    model.config.tie_word_embeddings = False
    if hasattr(model, "_tied_weights_keys"):
        model._tied_weights_keys = None


def _replace(model: nn.Module, dotted_name: str, replacement: nn.Module) -> None:
    parent_name, _, child_name = dotted_name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child_name, replacement)


def weight_bytes(model: nn.Module) -> int:
    """Bytes of every weight: float parameters plus the quantised layers' buffers, shared ones once."""
    from core.quant.bf16_linear import BFloat16Linear
    from core.quant.block_embedding import BlockEmbedding
    from core.quant.split_int4_linear import SplitInt4Linear

    quantised = (Int4Linear, Int8Linear, Q8Head, Q8Embedding, SplitInt4Linear, BlockEmbedding, BFloat16Linear)
    tensors: list[torch.Tensor] = list(model.parameters())
    for module in model.modules():
        if isinstance(module, quantised):
            tensors.extend(b for b in module.buffers(recurse=False) if b is not None)
    seen: set[int] = set()
    total = 0
    for tensor in tensors:
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            total += tensor.numel() * tensor.element_size()
    return total


def parameter_count(model: nn.Module) -> int:
    """Weights of the float model, shared (tied) ones counted once; call it before quantising."""
    return sum(p.numel() for p in model.parameters())
