"""The progress callback type shared by slow engine steps."""

from __future__ import annotations

import threading
from collections.abc import Callable

# Called with a fraction in [0, 1] and a short phrase saying what is happening now.
ProgressCallback = Callable[[float, str], None]


def no_progress(fraction: float, message: str) -> None:
    """A callback for callers that do not show progress."""


def scaled(progress: ProgressCallback, start: float, end: float) -> ProgressCallback:
    """Map a sub-step's own 0..1 onto the slice [start, end] of the whole."""

    def report(fraction: float, message: str) -> None:
        progress(start + (end - start) * min(max(fraction, 0.0), 1.0), message)

    return report


def never_backwards(progress: ProgressCallback) -> ProgressCallback:
    """Report no fraction below one already reported: steps that overlap (a hash on a helper thread
    beside the kernels' compile) would otherwise move a progress bar back and forth."""
    highest = [0.0]
    lock = threading.Lock()  # the two threads report at once

    def report(fraction: float, message: str) -> None:
        with lock:
            highest[0] = max(highest[0], fraction)
            progress(highest[0], message)

    return report
