"""A StoppingCriteria that ends generation at the next decode step once an Event is set."""

from __future__ import annotations

import threading

import torch
from transformers import StoppingCriteria


class StopOnEvent(StoppingCriteria):
    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device)
