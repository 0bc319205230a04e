"""A Linear layer for 5-, 6- and 8-bit GGUF weights: several int4 products over the same input, summed."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from core.quant.groupwise import GROUP_SIZE, PACK_ROWS
from core.quant.int4_linear import Int4Linear, pack_groups, packed_product
from core.quant.int_groups import IntGroups

# Rows decoded and packed at a time: the int32 whole numbers and their planes take 4 bytes a weight
# each, so a large embedding decoded whole would need several times the file's size. A multiple of
# the packing's 64-row tiles, so chunks pack to the same bytes as the whole.
CHUNK_ROWS = 4096
# torch packs rows in tiles of 64 (AVX-512) or 32 (AVX2), a short last tile differently, so stacked
# planes line up only when each plane's rows fill whole tiles: a plane is padded with zero rows to this.
PACK_TILE_ROWS = 64


class SplitInt4Linear(nn.Module):
    """y = x W^T with W = sum_k 16^k * scale * digit_k + minimum, each digit plane a 4-bit weight.

    The planes are stacked as extra output rows of one packed weight, so a decode step makes one
    kernel call per layer (at one token a call costs about as much in overhead as in arithmetic).
    """

    packed_weight: torch.Tensor
    scales_and_zeros: torch.Tensor
    bias: torch.Tensor | None

    def __init__(
        self,
        packed: torch.Tensor,
        scales_and_zeros: torch.Tensor,
        plane_count: int,
        bias: torch.Tensor | None = None,
        out_features: int | None = None,
    ):
        """out_features: the real rows, when each plane was padded to whole packing tiles."""
        super().__init__()
        self.plane_count = plane_count
        self.plane_rows = packed.shape[0] // plane_count
        self.out_features = out_features or self.plane_rows
        self.in_features = scales_and_zeros.shape[0] * GROUP_SIZE
        self.register_buffer("packed_weight", packed)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        out = packed_product(x, self.in_features, self.packed_weight, self.scales_and_zeros)
        out = out.float().view(-1, self.plane_count, self.plane_rows).sum(1)[:, : self.out_features]
        out = out.to(x.dtype).reshape(*leading, self.out_features)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"planes={self.plane_count}x4 bits, group_size={GROUP_SIZE}"
        )


def fits_int4_kernel(out_features: int, in_features: int) -> bool:
    """The kernel's tiling needs these multiples; other shapes stay in float."""
    return in_features % GROUP_SIZE == 0 and out_features % PACK_ROWS == 0


def native_linear(groups: IntGroups, bias: torch.Tensor | None = None, plane_count: int | None = None) -> nn.Module:
    """One int4 product when the weight is 4-bit (Q4_0, Q4_1, Q4_K), a stack of planes otherwise."""
    rows = groups.n.shape[0]
    return native_linear_in_chunks(
        lambda start, end: (
            groups
            if (start, end) == (0, rows)
            else IntGroups(groups.n[start:end], groups.scales[start:end], groups.minimums[start:end])
        ),
        rows,
        plane_count or len(groups.nibble_planes()),
        bias,
    )


def native_linear_in_chunks(
    rows_of: Callable[[int, int], IntGroups], rows: int, plane_count: int, bias: torch.Tensor | None = None
) -> nn.Module:
    """Decode and pack CHUNK_ROWS rows at a time: rows_of(start, end) gives those rows' whole numbers."""
    packed: list[list[torch.Tensor]] = [[] for _ in range(plane_count)]
    scales: list[list[torch.Tensor]] = [[] for _ in range(plane_count)]
    for start in range(0, rows, CHUNK_ROWS):
        groups = rows_of(start, min(start + CHUNK_ROWS, rows))
        if plane_count > 1 and start + CHUNK_ROWS >= rows:
            groups = _padded(groups, -rows % PACK_TILE_ROWS)
        for k, plane in enumerate(groups.nibble_planes(plane_count)):
            plane_packed, plane_scales = pack_groups(plane)
            packed[k].append(plane_packed)
            scales[k].append(plane_scales)
    whole = [(_cat(p), _cat(s, dim=1)) for p, s in zip(packed, scales)]
    if plane_count == 1:
        return Int4Linear(whole[0], bias)
    return SplitInt4Linear(_cat([p for p, _ in whole]), _cat([s for _, s in whole], dim=1), plane_count, bias, rows)


def _padded(groups: IntGroups, extra: int) -> IntGroups:
    """Zero rows after the real ones: a zero scale and minimum make them contribute nothing."""
    if not extra:
        return groups
    return IntGroups(
        torch.cat([groups.n, torch.zeros(extra, groups.n.shape[1], dtype=groups.n.dtype)]),
        torch.cat([groups.scales, torch.zeros(extra, groups.scales.shape[1])]),
        torch.cat([groups.minimums, torch.zeros(extra, groups.minimums.shape[1])]),
    )


def _cat(parts: list[torch.Tensor], dim: int = 0) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=dim)
