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
        if self._size == len(self._data):
            grown = np.empty(len(self._data) * 2, dtype=self._data.dtype)
            grown[: self._size] = self._data
            self._data = grown
        self._data[self._size] = value
        self._size += 1

    def view(self) -> np.ndarray:
        """The filled part, without copying."""
        return self._data[: self._size]

    def clear(self) -> None:
        self._size = 0
