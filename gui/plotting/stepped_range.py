"""Axis ranges that grow in powers of two, so a live plot re-lays out its axes rarely, not every frame."""

from __future__ import annotations


def stepped_limit(value: float, floor: float) -> float:
    """The smallest power-of-two multiple of floor that holds value."""
    limit = floor
    while limit < value:
        limit *= 2
    return limit


class SteppedRange:
    """Tracks one axis: set_if_grown() calls the setter only when the data outgrows the current limit."""

    def __init__(self, setter, floor: float):
        self._setter = setter
        self._floor = floor
        self._limit: float | None = None

    @property
    def limit(self) -> float | None:
        return self._limit

    def reset(self) -> None:
        self._limit = None
        self.set_if_grown(0.0)

    def set_if_grown(self, value: float) -> None:
        limit = stepped_limit(value, self._floor)
        if limit != self._limit:
            self._limit = limit
            self._setter(0, limit, padding=0.02)
