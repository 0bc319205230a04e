"""Who is told when a pass waited for packing: (start, duration) in perf_counter_ns, as gc.callbacks tells of collections."""

from __future__ import annotations

from collections.abc import Callable

# The reply's counters (core/timing/engine_counters.py) add themselves here while a reply runs.
PACKING_CALLBACKS: list[Callable[[int, int], None]] = []
