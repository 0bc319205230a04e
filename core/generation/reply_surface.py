"""What every reply offers its caller, local or over the wire: stop, wait for the end, or run it to the end."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.timing.trace import GenerationTrace


class ReplySurface:
    """Shared by Generation and RemoteReply; a subclass sets stop_event, trace and _done, and defines start and __iter__."""

    stop_event: threading.Event
    trace: GenerationTrace | None
    _done: threading.Event

    def start(self, request_start_ns: int | None = None) -> ReplySurface:
        raise NotImplementedError

    def __iter__(self) -> Iterator[object]:
        raise NotImplementedError

    def stop(self) -> None:
        self.stop_event.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the reply's work has returned; True when it has (or when the reply never started)."""
        return self.trace is None or self._done.wait(timeout)

    def run_to_end(self):
        """Start if needed, consume every event, wait for the work to return, and give the trace."""
        if self.trace is None:
            self.start()
        for _ in self:
            pass
        self.join()
        return self.trace
