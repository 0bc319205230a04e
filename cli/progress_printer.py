"""Show loading progress on stderr, redrawing one line on a terminal and printing phase changes elsewhere."""

from __future__ import annotations

import contextlib
import sys
from typing import TextIO

from core.timing.prefill_eta import describe_prefill, prefill_eta_s


class ProgressPrinter:
    def __init__(self, stream: TextIO | None = None):
        # sys.stderr looked up now, not when the module was imported: it may have been replaced since.
        self._stream = stream or sys.stderr
        self._interactive = self._stream.isatty()
        self._last_message: str | None = None

    def __call__(self, fraction: float, message: str) -> None:
        # A stderr whose reader has gone loses the progress, not the reply.
        with contextlib.suppress(OSError, ValueError):
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


class PrefillLine:
    """The prompt's pass on a terminal: one redrawn line with % and ETA, cleared at the first token.

    Given each of a LocalReply's progress events; prints nothing when the stream is not a terminal,
    so piped output and --json stay clean.
    """

    def __init__(self, stream: TextIO | None = None):
        # sys.stderr looked up now, not when the module was imported: it may have been replaced since.
        self._stream = stream or sys.stderr
        self._interactive = self._stream.isatty()
        self._started_ns: int | None = None
        self._drawn = False

    def __call__(self, event) -> None:
        if not hasattr(event, "layers_done") or not self._interactive:
            return
        if self._started_ns is None:
            self._started_ns = event.timestamp_ns
        text = describe_prefill(event.fraction, prefill_eta_s(self._started_ns, event.timestamp_ns, event.fraction))
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(f"\r{text:<60.60}")
            self._stream.flush()
            self._drawn = True

    def end(self) -> None:
        """Clear the line (the reply starts where it was)."""
        if self._drawn:
            with contextlib.suppress(OSError, ValueError):
                self._stream.write("\r" + " " * 60 + "\r")
                self._stream.flush()
            self._drawn = False
