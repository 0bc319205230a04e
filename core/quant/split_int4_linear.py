"""A Linear layer for 5-, 6- and 8-bit GGUF weights: several int4 products over the same input, summed."""

from __future__ import annotations

import torch
from torch import nn

from core.quant.groupwise import GROUP_SIZE, PACK_ROWS, Q4Groups
from core.quant.int4_linear import KERNEL_DTYPE, Int4Linear
from core.quant.int_groups import IntGroups


class SplitInt4Linear(nn.Module):
    """y = x W^T with W = sum_k 16^k * scale * digit_k + minimum, each digit plane a 4-bit weight.

    The planes are stacked as extra output rows of one packed weight, so a decode step makes one
    kernel call per layer (at one token a call costs about as much in overhead as in arithmetic).
    """

    def __init__(self, planes: list[Q4Groups], bias: torch.Tensor | None = None):
        super().__init__()
        self.plane_count = len(planes)
        self.out_features, self.in_features = planes[0].quants.shape
        stacked = Q4Groups(torch.cat([p.quants for p in planes]), torch.cat([p.scales for p in planes]),
                           torch.cat([p.minimums for p in planes]))
        inner = Int4Linear(stacked)
        self.register_buffer("packed_weight", inner.packed_weight)
        self.register_buffer("scales_and_zeros", inner.scales_and_zeros)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        flat = x.reshape(-1, self.in_features).to(KERNEL_DTYPE)
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed_weight, GROUP_SIZE, self.scales_and_zeros)
        out = out.float().view(-1, self.plane_count, self.out_features).sum(1)
        out = out.to(x.dtype).reshape(*leading, self.out_features)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"planes={self.plane_count}x4 bits, group_size={GROUP_SIZE}")


def fits_int4_kernel(out_features: int, in_features: int) -> bool:
    """The kernel's tiling needs these multiples; other shapes stay in float."""
    return in_features % GROUP_SIZE == 0 and out_features % PACK_ROWS == 0


def native_linear(groups: IntGroups, bias: torch.Tensor | None = None) -> nn.Module:
    """One int4 product when the weight is 4-bit (Q4_0, Q4_1, Q4_K), a stack of planes otherwise."""
    planes = groups.nibble_planes()
    if len(planes) == 1:
        return Int4Linear(planes[0], bias)
    return SplitInt4Linear(planes, bias)
