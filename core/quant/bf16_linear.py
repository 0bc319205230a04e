"""The fallback for a GGUF weight whose quant type has no kernel here: the dequantised weight in bfloat16."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BFloat16Linear(nn.Module):
    """y = x W^T (+ b) with W held in bfloat16: half float32's bytes, at the cost of re-rounding the weight."""

    weight_bf16: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.register_buffer("weight_bf16", weight.detach().to(torch.bfloat16).contiguous())
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.linear(x.to(torch.bfloat16), self.weight_bf16).to(x.dtype)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype=bfloat16"
