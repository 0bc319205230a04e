"""The models races run on: loaded for a side (or the chat's own reused), the last race's kept for the next."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from core.race.sides import RaceSide

# The last race's models stay loaded, so racing again (or swapping A and B) does not load them again.
MODELS_KEPT = 2


class RaceModels:
    """Models the races loaded, the most recent kept; the chat's own model is used where a side asks for it."""

    def __init__(self):
        self._held: OrderedDict[tuple, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, side: RaceSide, chat_model, load: Callable[[RaceSide], object]):
        key = side.load_key
        with self._lock:
            if key in self._held:
                self._held.move_to_end(key)
                return self._held[key]
        if chat_model is not None and is_same_model(chat_model, side):
            return chat_model
        loaded = load(side)
        with self._lock:
            self._held[key] = loaded
            while len(self._held) > MODELS_KEPT:
                self._held.popitem(last=False)
        return loaded

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


def is_same_model(loaded, side: RaceSide) -> bool:
    """The chat's model is this side's: the same local weights at the same precision and device."""
    return not side.remote and loaded.serves(side.model, side.dtype, side.device)
