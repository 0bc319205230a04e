"""Several projections of one input as one call: int4 layers fuse into a single kernel product."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from core.quant.groupwise import GROUP_SIZE
from core.quant.int4_linear import KERNEL_DTYPE, Int4Linear

# torch packs int4 weight rows in blocks of 64 (AVX-512) or 32 (AVX2 and others), a short last block
# differently: packed layers join into one exactly only where each but the last fills whole blocks.
PACK_BLOCK_ROWS = 64


def fused_projection(*modules: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """The modules' outputs for one input, side by side.

    Int4 layers run as one fused product, since each kernel call costs about as much in overhead as in
    arithmetic at one token. Their biases (Qwen2's q/k/v) are added after it, as Int4Linear adds its own.
    Real models' layer sizes are multiples of 64; a tiny one's may not be, and then each runs on its own.
    """
    joinable = all(isinstance(module, Int4Linear) for module in modules) and not any(
        module.out_features % PACK_BLOCK_ROWS for module in modules[:-1]
    )
    if not joinable:
        if len(modules) == 1:
            return modules[0]
        return lambda x: torch.cat([module(x) for module in modules], dim=-1)
    weight = torch.cat([module.packed_weight for module in modules], dim=0)
    scales = torch.cat([module.scales_and_zeros for module in modules], dim=1)
    bias = _joined_bias(modules)
    matmul = torch.ops.aten._weight_int4pack_mm_for_cpu

    if bias is None:

        def project(x: torch.Tensor) -> torch.Tensor:
            return matmul(x.to(KERNEL_DTYPE), weight, GROUP_SIZE, scales).to(x.dtype)
    else:

        def project(x: torch.Tensor) -> torch.Tensor:
            return matmul(x.to(KERNEL_DTYPE), weight, GROUP_SIZE, scales).to(x.dtype) + bias

    return project


def _joined_bias(modules: tuple[Int4Linear, ...]) -> torch.Tensor | None:
    """The biases side by side, zeros for a layer without one (adding 0.0 changes no value); None if none has one."""
    if all(module.bias is None for module in modules):
        return None
    return torch.cat(
        [module.bias if module.bias is not None else torch.zeros(module.out_features) for module in modules]
    )
