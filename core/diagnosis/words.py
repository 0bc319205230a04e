"""How the findings write their figures: durations and shares as a person reads them."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """1.24 s, 310 ms, 2.5 ms."""
    if seconds >= 1:
        return f"{seconds:,.1f} s"
    if seconds >= 0.01:
        return f"{seconds * 1000:,.0f} ms"
    return f"{seconds * 1000:.1f} ms"


def share(fraction: float) -> str:
    return f"{fraction:.0%}"


def times(values: list[float], most: int = 3) -> str:
    """'2.1, 3.4 and 5.0 s' (the first `most`, then how many more)."""
    shown = [f"{value:,.1f}" for value in values[:most]]
    more = len(values) - len(shown)
    if more > 0:
        return ", ".join(shown) + f" s and {more} more"
    if len(shown) == 1:
        return f"{shown[0]} s"
    return ", ".join(shown[:-1]) + f" and {shown[-1]} s"
