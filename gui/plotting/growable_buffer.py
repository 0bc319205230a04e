"""A numpy array that grows by doubling, so appending a plot point is amortised O(1)."""

from __future__ import annotations

import numpy as np


class GrowableBuffer:
    def __init__(self, initial_capacity: int = 256, dtype=np.float64):
        self._data = np.empty(initial_capacity, dtype=dtype)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        return len(self._data)

    def append(self, value: float) -> None:
        if self._size == len(self._data):  # checked here, not in _reserve: an append per token, per plot
            self._reserve(self._size + 1)
        self._data[self._size] = value
        self._size += 1

    def extend(self, values: np.ndarray) -> None:
        needed = self._size + len(values)
        self._reserve(needed)
        self._data[self._size : needed] = values
        self._size = needed

    def _reserve(self, needed: int) -> None:
        if needed > len(self._data):
            capacity = len(self._data)
            while capacity < needed:
                capacity *= 2
            grown = np.empty(capacity, dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown

    def view(self) -> np.ndarray:
        """The filled part, without copying."""
        return self._data[: self._size]

    def clear(self) -> None:
        self._size = 0
