"""A quantised weight as whole numbers with one scale and minimum per group of 32: w = scale * n + minimum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.quant.groupwise import GROUP_SIZE, Q4Groups

NIBBLE = 16


@dataclass(frozen=True)
class IntGroups:
    """n: int32 [N, K], signed; scales and minimums: float32 [N, K / 32].

    Every GGUF quant type this app runs natively decodes to this form without rounding: the 5-, 6- and
    8-bit types only have wider n, and Q6_K's 16-wide sub-block scales are folded into n (its scales are
    small integers times one fp16 per 256 weights).
    """

    n: torch.Tensor
    scales: torch.Tensor
    minimums: torch.Tensor

    def dequantize(self) -> torch.Tensor:
        rows, columns = self.n.shape
        grouped = self.n.view(rows, columns // GROUP_SIZE, GROUP_SIZE).float()
        return (grouped * self.scales[..., None] + self.minimums[..., None]).view(rows, columns)

    def permute_rows(self, order: torch.Tensor) -> IntGroups:
        return IntGroups(self.n[order], self.scales[order], self.minimums[order])

    def nibble_planes(self, count: int | None = None) -> list[Q4Groups]:
        """Split n into base-16 digits, each run as one int4 product with the group scale times 16^k.

        Digits are balanced (-8..7, what the kernel's (q - 8) reads), so no plane carries a large offset
        that the next must cancel: each product is rounded to bf16 on its own, and cancellation would
        magnify that rounding. A constant shift moves n into the range the planes can hold; the
        minimum absorbs it. count: how many planes (at least what n needs), so that row chunks of one
        weight split alike; None takes the fewest that hold n.
        """
        # numpy for the elementwise work: single-threaded, it skips a thread pool's start-up per op, which
        # on a busy two-core machine cost more than the op itself.
        n = self.n.numpy()
        low, high = int(n.min()), int(n.max())
        needed = 1
        while high - low > 15 * _reach(needed):
            needed += 1
        count = needed if count is None else count
        if count < needed:
            raise ValueError(f"these whole numbers need {needed} planes of 4 bits, not {count}")
        reach = _reach(count)
        # n - shift must lie in -8 * reach .. 7 * reach; within that, centre it, so that the shift the
        # minimum absorbs (and the kernel's zero point must then cancel) stays small.
        shift = min(max((low + high) // 2, high - 7 * reach), low + 8 * reach)
        minimums = self.minimums + shift * self.scales
        # Balanced digits d_k of n - shift are the plain base-16 digits q_k = d_k + 8 of
        # n - shift + 8 * reach (since 8 * reach = sum of 8 * 16^k): shifts and masks, no division.
        unsigned = n - np.int32(shift - 8 * reach) if shift != 8 * reach else n
        planes = []
        for k in range(count):
            quants = unsigned if count == 1 else (unsigned >> (4 * k)) & 0x0F
            scale = self.scales * float(NIBBLE**k)
            # Q4Groups holds w = scale * q + minimum with q = digit + 8 in 0..15.
            plane_min = -8 * scale + (minimums if k == 0 else 0)
            planes.append(Q4Groups(torch.from_numpy(np.ascontiguousarray(quants, dtype=np.int32)), scale, plane_min))
        return planes


def _reach(planes: int) -> int:
    """1, 17, 273, ...: balanced digits of -8..7 over this many planes span -8 * reach .. 7 * reach."""
    return (NIBBLE**planes - 1) // (NIBBLE - 1)
