"""Several sequences decoded together on the C kernels: each step reads every weight once for all of them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from core.model.kernel_causal_lm import KernelCausalLM


def decode_together(
    model: KernelCausalLM,
    ids: Sequence[int],
    batch_size: int,
    new_tokens: int,
    *,
    suppress: Iterable[int] = (),
    cancel: threading.Event | None = None,
) -> list[int]:
    """Greedy-decode new_tokens for batch_size copies of ids; returns a perf_counter_ns stamp per step.

    Each stamp is taken when a step's logits are ready, as the lab's StepStamper stamps generate()'s steps:
    the first one ends the prefill of all the prompts, which run as one pass. suppress: token ids never
    chosen (the lab forbids EOS so every run decodes the same count). A set cancel ends it early.
    """
    kernel = model.kernel
    kernel.claim_cache()  # the batch overwrites the cache a chat may be using
    threads = torch.get_num_threads()
    prompt = np.asarray(ids, dtype=np.int32)
    length = prompt.size
    kernel.reserve(batch_size, length + new_tokens, keep=False)
    hidden = kernel.embed(np.tile(prompt, batch_size))
    kernel.layers(
        hidden,
        np.repeat(np.arange(batch_size), length),
        np.tile(np.arange(length), batch_size),
        0,
        kernel.shape.layers,
        threads,
    )
    logits = kernel.logits(hidden[length - 1 :: length], threads)
    banned = np.asarray(sorted(set(suppress)), dtype=np.int64)
    sequences = np.arange(batch_size)
    stamps = []
    for step in range(new_tokens):
        stamps.append(time.perf_counter_ns())
        if banned.size:
            logits[:, banned] = -np.inf
        chosen = logits.argmax(axis=1)
        if step == new_tokens - 1 or (cancel is not None and cancel.is_set()):
            break
        hidden = kernel.embed(chosen)
        kernel.layers(hidden, sequences, np.full(batch_size, length + step), 0, kernel.shape.layers, threads)
        logits = kernel.logits(hidden, threads)
    return stamps
