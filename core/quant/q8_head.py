"""The LM head and embedding on the Q8_0 grid (w = scale * q, q int8, groups of 32), kept exact.

torch has no grouped int8 kernel, so the head splits each int8 quant into two 4-bit halves and
runs the int4 kernel twice: w = 16·d·hi + d·lo − 128·d with q + 128 = 16·hi + lo.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from core.quant.groupwise import GROUP_SIZE
from core.quant.int4_linear import KERNEL_DTYPE


@dataclass(frozen=True)
class Q8Groups:
    """quants: int8 [N, K]; scales: float32 [N, K / 32]."""

    quants: torch.Tensor
    scales: torch.Tensor

    def dequantize_rows(self, rows: torch.Tensor) -> torch.Tensor:
        quants = self.quants[rows].float()
        scales = self.scales[rows]
        shape = quants.shape
        grouped = quants.view(*shape[:-1], shape[-1] // GROUP_SIZE, GROUP_SIZE) * scales.unsqueeze(-1)
        return grouped.view(shape)


def quantize_q8_groups(weight: torch.Tensor) -> Q8Groups:
    rows, columns = weight.shape
    grouped = weight.detach().float().view(rows, columns // GROUP_SIZE, GROUP_SIZE)
    scales = grouped.abs().amax(dim=-1) / 127.0
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    quants = torch.round(grouped / safe[..., None]).clamp_(-127, 127).to(torch.int8)
    return Q8Groups(quants.view(rows, columns), scales)


class Q8Head(nn.Module):
    """Logits = x W^T with W on the Q8_0 grid, as two int4 products that share the group scales."""

    def __init__(self, groups: Q8Groups):
        super().__init__()
        self.out_features, self.in_features = groups.quants.shape
        unsigned = groups.quants.to(torch.int32) + 128
        high, low = unsigned // 16, unsigned % 16
        scales = groups.scales
        # The kernel computes (q - 8) * scale + zero per group.
        self.register_buffer("packed_high", torch.ops.aten._convert_weight_to_int4pack_for_cpu(high.contiguous(), 1))
        self.register_buffer("packed_low", torch.ops.aten._convert_weight_to_int4pack_for_cpu(low.contiguous(), 1))
        self.register_buffer("sz_high", _scales_and_zeros(16 * scales, 16 * 8 * scales - 128 * scales))
        self.register_buffer("sz_low", _scales_and_zeros(scales, 8 * scales))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        flat = x.reshape(-1, self.in_features).to(KERNEL_DTYPE)
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed_high, GROUP_SIZE, self.sz_high)
        out = out.float() + torch.ops.aten._weight_int4pack_mm_for_cpu(flat, self.packed_low, GROUP_SIZE, self.sz_low)
        return out.to(x.dtype).reshape(*leading, self.out_features)


class Q8Embedding(nn.Module):
    """Token rows dequantised exactly from the same Q8_0 quants the head uses.

    embed_scale: the factor a scaled embedding (Gemma's sqrt(hidden)) multiplies its rows by, kept here.
    """

    quants: torch.Tensor
    scales: torch.Tensor
    embed_scale: torch.Tensor | None

    def __init__(self, groups: Q8Groups, embed_scale: torch.Tensor | None = None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = groups.quants.shape
        self.register_buffer("quants", groups.quants)
        self.register_buffer("scales", groups.scales)
        self.register_buffer("embed_scale", embed_scale)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        rows = Q8Groups(self.quants, self.scales).dequantize_rows(token_ids)
        return rows if self.embed_scale is None else rows * self.embed_scale


def _scales_and_zeros(scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    return torch.stack([scales.t(), zeros.t()], dim=-1).to(KERNEL_DTYPE).contiguous()
