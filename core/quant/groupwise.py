"""Asymmetric 4-bit groups of 32, the Q4_1 grid: w = scale * q + minimum, q in 0..15."""

from __future__ import annotations

from dataclasses import dataclass

import torch

GROUP_SIZE = 32
# torch's int4 packing tiles output rows by 16.
PACK_ROWS = 16


@dataclass(frozen=True)
class Q4Groups:
    """quants: int32 [N, K] in 0..15; scales and minimums: float32 [N, K / 32]."""

    quants: torch.Tensor
    scales: torch.Tensor
    minimums: torch.Tensor

    def dequantize(self) -> torch.Tensor:
        rows, columns = self.quants.shape
        grouped = self.quants.view(rows, columns // GROUP_SIZE, GROUP_SIZE).float()
        return (grouped * self.scales[..., None] + self.minimums[..., None]).view(rows, columns)

    def permute_rows(self, order: torch.Tensor) -> Q4Groups:
        return Q4Groups(self.quants[order], self.scales[order], self.minimums[order])


def quantize_q4_groups(weight: torch.Tensor) -> Q4Groups:
    """Round a float weight [N, K] onto the Q4_1 grid (for models that do not come as a Q4_1 GGUF)."""
    rows, columns = weight.shape
    grouped = weight.detach().float().view(rows, columns // GROUP_SIZE, GROUP_SIZE)
    low = grouped.amin(dim=-1)
    high = grouped.amax(dim=-1)
    scales = (high - low) / 15.0
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    quants = torch.round((grouped - low[..., None]) / safe[..., None]).clamp_(0, 15).to(torch.int32)
    return Q4Groups(quants.view(rows, columns), scales, low)
