"""Show loading progress on stderr, redrawing one line on a terminal and printing phase changes elsewhere."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressPrinter:
    def __init__(self, stream: TextIO = sys.stderr):
        self._stream = stream
        self._interactive = stream.isatty()
        self._last_message = None

    def __call__(self, fraction: float, message: str) -> None:
        if self._interactive:
            width = 24
            filled = int(round(fraction * width))
            self._stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} {message:<60.60}")
            if fraction >= 1.0:
                self._stream.write("\n")
        elif message != self._last_message:
            self._stream.write(f"[{fraction:4.0%}] {message}\n")
        self._last_message = message
        self._stream.flush()
