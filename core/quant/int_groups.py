"""A quantised weight as whole numbers with one scale and minimum per group of 32: w = scale * n + minimum."""

from __future__ import annotations

from dataclasses import dataclass

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

    def permute_rows(self, order: torch.Tensor) -> "IntGroups":
        return IntGroups(self.n[order], self.scales[order], self.minimums[order])

    def nibble_planes(self) -> list[Q4Groups]:
        """Split n into base-16 digits, each run as one int4 product with the group scale times 16^k.

        Digits are balanced (-8..7, what the kernel's (q - 8) reads), so no plane carries a large offset
        that the next must cancel: each product is rounded to bf16 on its own, and cancellation would
        magnify that rounding. A constant shift moves n into the range the planes can hold; the
        minimum absorbs it.
        """
        low, high = int(self.n.min()), int(self.n.max())
        count = 1
        while True:
            reach = (NIBBLE ** count - 1) // (NIBBLE - 1)  # 1, 17, 273, ...: what digits of -8..7 span
            if high - low <= 15 * reach:
                break
            count += 1
        # n - shift must lie in -8 * reach .. 7 * reach; within that, centre it, so that the shift the
        # minimum absorbs (and the kernel's zero point must then cancel) stays small.
        shift = min(max((low + high) // 2, high - 7 * reach), low + 8 * reach)
        rest = self.n - shift
        minimums = self.minimums + shift * self.scales
        planes = []
        for k in range(count):
            digit = torch.remainder(rest + 8, NIBBLE) - 8
            rest = torch.div(rest - digit, NIBBLE, rounding_mode="floor")
            scale = self.scales * float(NIBBLE ** k)
            # Q4Groups holds w = scale * q + minimum with q = digit + 8 in 0..15.
            plane_min = -8 * scale + (minimums if k == 0 else 0)
            planes.append(Q4Groups((digit + 8).to(torch.int32), scale, plane_min))
        return planes
