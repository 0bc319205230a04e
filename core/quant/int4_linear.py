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

    def __init__(self, groups: Q4Groups, bias: torch.Tensor | None = None):
        super().__init__()
        out_features, in_features = groups.quants.shape
        if in_features % GROUP_SIZE:
            raise ValueError(f"in_features {in_features} is not a multiple of {GROUP_SIZE}")
        self.in_features = in_features
        self.out_features = out_features
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(groups.quants.contiguous(), 1)
        # The kernel dequantises as (q - 8) * scale + zero, so zero = minimum + 8 * scale reproduces
        # the Q4_1 grid scale * q + minimum.
        zeros = groups.minimums + 8 * groups.scales
        scales_and_zeros = torch.stack([groups.scales.t(), zeros.t()], dim=-1).to(KERNEL_DTYPE).contiguous()
        self.register_buffer("packed_weight", packed)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        flat = x.reshape(-1, self.in_features).to(KERNEL_DTYPE)
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed_weight, GROUP_SIZE, self.scales_and_zeros)
        out = out.to(x.dtype).reshape(*leading, self.out_features)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bits=4, group_size={GROUP_SIZE}"
