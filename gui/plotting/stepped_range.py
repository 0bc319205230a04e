"""Axis ranges that grow in powers of two, so a live plot re-lays out its axes rarely, not every frame."""

from __future__ import annotations


def stepped_limit(value: float, floor: float) -> float:
    """The smallest power-of-two multiple of floor that holds value."""
    limit = floor
    while limit < value:
        limit *= 2
    return limit


class SteppedRange:
    """Tracks one axis: set_if_grown() calls the setter only when the data outgrows the current limit; reset() sets
    the limit that holds a value, smaller or larger, and calls the setter only when that changes it."""

    def __init__(self, setter, floor: float):
        self._setter = setter
        self._floor = floor
        self._limit: float | None = None

    @property
    def limit(self) -> float | None:
        return self._limit

    def reset(self, value: float = 0.0) -> None:
        """The limit that holds value (the floor for 0), whether it is smaller or larger than the current one."""
        self._set(stepped_limit(value, self._floor))

    def set_if_grown(self, value: float) -> bool:
        """Whether the limit stepped up to hold value."""
        limit = stepped_limit(value, self._floor)
        if self._limit is None or limit > self._limit:
            self._set(limit)
            return True
        return False

    def _set(self, limit: float) -> None:
        if limit != self._limit:
            self._limit = limit
            self._setter(0, limit, padding=0.02)
