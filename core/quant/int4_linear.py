"""A Linear layer whose weights stay 4-bit, multiplied by torch's CPU int4 kernel (group size 32)."""

from __future__ import annotations

import torch
from torch import nn

from core.quant.groupwise import GROUP_SIZE, Q4Groups

# The kernel reads bf16 activations and bf16 scales fastest by far (about 30x faster than fp32
# here); the scales lose a little precision against the file's fp16 ones, measured by the tests.
KERNEL_DTYPE = torch.bfloat16


class Int4Linear(nn.Module):
    """y = x W^T (+ b), with W held as packed 4-bit quants plus per-group scale and zero."""

    packed_weight: torch.Tensor
    scales_and_zeros: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, groups: Q4Groups | tuple[torch.Tensor, torch.Tensor], bias: torch.Tensor | None = None):
        """groups: the 4-bit weight, or what pack_groups made of it (a weight packed in row chunks)."""
        super().__init__()
        packed, scales_and_zeros = pack_groups(groups) if isinstance(groups, Q4Groups) else groups
        self.out_features = packed.shape[0]
        self.in_features = scales_and_zeros.shape[0] * GROUP_SIZE
        self.register_buffer("packed_weight", packed)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        out = packed_product(x, self.in_features, self.packed_weight, self.scales_and_zeros)
        out = out.to(x.dtype).reshape(*leading, self.out_features)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits=4, group_size={GROUP_SIZE}"


def packed_product(
    x: torch.Tensor, in_features: int, packed: torch.Tensor, scales_and_zeros: torch.Tensor
) -> torch.Tensor:
    """x's rows times a packed 4-bit weight on torch's int4 CPU kernel: [rows, packed rows], in bfloat16."""
    flat = x.reshape(-1, in_features).to(KERNEL_DTYPE)
    return torch.ops.aten._weight_int4pack_mm_for_cpu(flat, packed, GROUP_SIZE, scales_and_zeros)


def pack_groups(groups: Q4Groups) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel's packed quants [N, K / 2] and scales-and-zeros [K / 32, N, 2].

    Rows pack in tiles of 64, so a weight packed in chunks of a multiple of 64 rows, concatenated
    (quants along rows, scales along dim 1), equals the weight packed whole.
    """
    in_features = groups.quants.shape[1]
    if in_features % GROUP_SIZE:
        raise ValueError(f"in_features {in_features} is not a multiple of {GROUP_SIZE}")
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(groups.quants.contiguous(), 1)
    # The kernel dequantises as (q - 8) * scale + zero, so zero = minimum + 8 * scale reproduces
    # the Q4_1 grid scale * q + minimum.
    zeros = groups.minimums + 8 * groups.scales
    scales_and_zeros = torch.stack([groups.scales.t(), zeros.t()], dim=-1).to(KERNEL_DTYPE).contiguous()
    return packed, scales_and_zeros
