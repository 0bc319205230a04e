"""Stopping a reply: between decode steps (a StoppingCriteria), and between layers of a long forward pass."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import StoppingCriteria


class StopOnEvent(StoppingCriteria):
    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        # transformers declares torch.BoolTensor, a legacy tensor type that no torch op is typed to return.
        return torch.full(  # type: ignore[return-value]
            (input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device
        )


class PassInterrupted(Exception):
    """A forward pass was abandoned between two layers because a stop was requested."""


def decoder_layers(model: Any) -> list:
    """The model's stack of decoder layers (the ModuleList as long as config.num_hidden_layers), or []."""
    count = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    if not count:
        return []
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return list(module)
    return []


@contextmanager
def interruptible_prefill(
    model: Any, event: threading.Event, progress: Callable[[int, int], None] | None = None
) -> Iterator[None]:
    """Inside, the first forward pass (the prompt's) checks event before each decoder layer and raises
    PassInterrupted once it is set.

    progress(layers_done, layers_total), when given, is called at the same points after the check, and
    once more after the last layer: the prompt's pass only, like the checks.

    generate() checks stopping criteria only between passes, and a long prompt's one pass takes
    seconds; this makes a stop during it land within one layer. The checks are removed when that
    pass ends: on every decode step they cost about 3% of an int4 step, and a stop there already
    lands after the step. A model whose layers are not found keeps generate()'s behaviour.
    """

    def check(index):
        def hook(module, args):
            if event.is_set():
                raise PassInterrupted()
            if progress is not None:
                progress(index, len(layers))

        return hook

    def remove_checks(*_):
        for handle in handles:
            handle.remove()

    def last_layer_done(*_):
        remove_checks()
        if progress is not None:
            progress(len(layers), len(layers))

    layers = decoder_layers(model)
    handles = [layer.register_forward_pre_hook(check(index)) for index, layer in enumerate(layers)]
    if layers:
        handles.append(layers[-1].register_forward_hook(last_layer_done))
    try:
        yield
    finally:
        remove_checks()
