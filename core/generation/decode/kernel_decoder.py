"""LeanDecoder's contract over the C kernels: a decode step is one call into C, a prompt one call per layer.

The prompt's pass runs layer by layer (in chunks: KernelModel.pass_over) so that a stop is seen at the
next layer and progress can be reported, as LeanDecoder does; a decode step runs every layer and the head
in C without returning to Python.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import numpy as np
import torch

from core.generation.decode.prompt_cache import PromptCache
from core.generation.stopping import PassInterrupted
from core.kernels.kernel_model import KernelModel

SHRINK_FACTOR = 4  # as LeanDecoder: a cache more than this many times the room needed is given back


class KernelDecoder:
    """forward(token_ids, start) returns the logits of the last position and extends the cache."""

    def __init__(self, kernel: KernelModel):
        self.kernel = kernel
        self.layer_count = kernel.shape.layers
        self.completed = 0  # positions whole in every layer after the last pass, even an abandoned one
        self.prompt_cache = PromptCache(self)
        # A weak reference: the kernel model must not keep its decoder (and the saved caches) alive.
        set_aside = weakref.WeakMethod(self.prompt_cache.set_aside)
        kernel.before_other_use = lambda: (set_aside() or (lambda: None))()

    @property
    def capacity(self) -> int:
        return self.kernel.capacity

    def start_sequence(self, positions: int, keep: int = 0) -> None:
        """Room for a sequence of about this many positions, whose first `keep` the cache already holds."""
        if keep:
            self.kernel.reserve(1, max(positions, keep))
        elif self.kernel.capacity > SHRINK_FACTOR * positions or self.kernel.sequences != 1:
            self.kernel.reserve(1, positions, keep=False)
        else:
            self.kernel.reserve(1, positions)

    # -- the prompt cache's store (core/generation/decode/prompt_cache.py) --------------------------

    def position_bytes(self) -> int:
        return self.kernel.position_bytes

    def copy_cache_out(self, positions: int) -> tuple[np.ndarray, np.ndarray]:
        return self.kernel.copy_cache_out(positions)

    def copy_cache_in(self, saved: tuple[np.ndarray, np.ndarray], positions: int) -> None:
        if self.kernel.sequences != 1:
            self.kernel.reserve(1, positions, keep=False)
        self.reserve(positions)
        self.kernel.copy_cache_in(*saved)

    def reserve(self, positions: int) -> None:
        if positions > self.kernel.capacity:
            self.kernel.reserve(1, max(positions, 2 * self.kernel.capacity))

    def verify(self, token_ids: torch.Tensor, start: int) -> torch.Tensor:
        """Every position's logits ([n, vocab] float32) for token_ids at start, start+1, ... in one pass over the
        weights: a step's token and its drafts (speculative decoding). The bits are those of n decode steps."""
        tokens = np.ascontiguousarray(token_ids.reshape(-1).numpy(), dtype=np.int32)
        self.reserve(start + tokens.size)
        threads = torch.get_num_threads()
        hidden = self.kernel.embed(tokens)
        positions = np.arange(start, start + tokens.size)
        self.kernel.layers(hidden, np.zeros(tokens.size), positions, 0, self.layer_count, threads)
        self.completed = start + tokens.size
        return torch.from_numpy(self.kernel.logits(hidden, threads))

    def keep(self, positions: int) -> None:
        """Only the first `positions` are the sequence's: a verify pass's rejected drafts are written over next."""
        self.completed = positions

    def forward(
        self,
        token_ids: torch.Tensor,
        start: int,
        interrupt: threading.Event | None = None,
        on_layer: Callable[[int, int], None] | None = None,
    ) -> torch.Tensor:
        """token_ids: 1-D, at positions start, start+1, ...; returns [1, vocab] float32 logits of the last one.

        interrupt and on_layer as LeanDecoder's: checked and called before each layer (of each chunk), and
        on_layer once more at the end, with (layers done, layers in all chunks).
        """
        tokens = np.ascontiguousarray(token_ids.reshape(-1).numpy(), dtype=np.int32)
        self.reserve(start + tokens.size)
        threads = torch.get_num_threads()
        self.completed = start
        if tokens.size == 1 and interrupt is None and on_layer is None:
            hidden = self.kernel.embed(tokens)
            self.kernel.layers(hidden, np.zeros(1), np.array([start]), 0, self.layer_count, threads)
            self.completed = start + 1
            return torch.from_numpy(self.kernel.logits(hidden, threads))

        def before_layer(done: int, total: int) -> None:
            if done < total and interrupt is not None and interrupt.is_set():
                raise PassInterrupted()
            if on_layer is not None:
                on_layer(done, total)

        try:
            return torch.from_numpy(self.kernel.pass_over(tokens, start, threads, before_layer=before_layer))
        finally:
            self.completed = self.kernel.completed
