"""A median that updates in O(log n) per value, for live per-token plots."""

from __future__ import annotations

import heapq


class RunningMedian:
    """Two heaps: the lower half as a max-heap (negated), the upper half as a min-heap."""

    def __init__(self) -> None:
        self._lower: list[float] = []
        self._upper: list[float] = []

    def __len__(self) -> int:
        return len(self._lower) + len(self._upper)

    def add(self, value: float) -> float:
        if self._lower and value > -self._lower[0]:
            heapq.heappush(self._upper, value)
        else:
            heapq.heappush(self._lower, -value)
        if len(self._lower) > len(self._upper) + 1:
            heapq.heappush(self._upper, -heapq.heappop(self._lower))
        elif len(self._upper) > len(self._lower):
            heapq.heappush(self._lower, -heapq.heappop(self._upper))
        return self._middle()

    def median(self) -> float | None:
        if not self:
            return None
        return self._middle()

    def _middle(self) -> float:
        if len(self._lower) > len(self._upper):
            return -self._lower[0]
        return (-self._lower[0] + self._upper[0]) / 2
