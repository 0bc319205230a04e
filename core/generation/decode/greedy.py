"""The greedy choice: the token of the highest score."""

from __future__ import annotations

import torch


def greedy(scores: torch.Tensor) -> int:
    """The token of the highest score of a [1, vocab] row, the first of equals (as torch's argmax). numpy's argmax
    takes 5 µs over a 49,152-token vocabulary where torch's took 93 µs, 2% of a 4 ms decode step."""
    if scores.device.type != "cpu":
        return int(scores.argmax(dim=-1))
    return int(scores.detach()[0].float().numpy().argmax())  # numpy has no bfloat16; float() of float32 is itself
