"""The engine inside the caller's process: what `ask`, `bench` and the fast tests use.

Events wait in a queue; a byte on a socket pair wakes the reader, so a window can watch fileno()
with its event loop exactly as it watches the engine process's pipe.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import time
from typing import TYPE_CHECKING

from core.engine.core import EngineCore
from core.engine.messages import Delivered, EngineStopped, Event, Request

if TYPE_CHECKING:
    from core.backend.served_model import ServedModel


class InProcessEngine:
    def __init__(self):
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._wake_reader, self._wake_writer = socket.socketpair()
        for end in (self._wake_reader, self._wake_writer):
            end.setblocking(False)
        self.core = EngineCore(self._emit)
        self.closed = False
        self._ended = False

    @property
    def logits_processors(self) -> tuple:
        return self.core.extra_logits_processors

    @logits_processors.setter
    def logits_processors(self, processors: tuple) -> None:
        """A seam for fault-injection tests: processors applied to every reply (only in-process)."""
        self.core.extra_logits_processors = tuple(processors)

    # Requests are handled at once (handle() never blocks): nothing waits to be written, and it cannot go silent.
    wants_to_write = False
    stop_unreported = False

    def send(self, request: Request) -> None:
        self.core.handle(request)

    def flush(self) -> None:
        pass

    def silent_for_s(self) -> float:
        return 0.0

    def adopt(self, loaded: ServedModel) -> None:
        self.core.adopt(loaded)

    def fileno(self) -> int:
        return self._wake_reader.fileno()

    def take_events(self) -> list[Delivered]:
        """Every event waiting now, stamped with the moment they were taken (one read, one stamp, as from the
        engine's process); never blocks."""
        try:
            while self._wake_reader.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        taken: list[Delivered] = []
        now = time.perf_counter_ns()
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return taken
            taken.append(Delivered(event, now))

    def close(self, timeout_s: float = 1.0) -> bool:
        """Stop every job; False when one is still inside work that cannot be left (its thread is a daemon)."""
        if self.closed:
            return True
        self.closed = True
        ended = self.core.close(timeout_s)
        self._wake_reader.close()
        self._wake_writer.close()
        return ended

    def end(self, description: str) -> None:
        """Stop every job and report the engine as stopped (Restart engine on an in-process engine)."""
        self.core.stop_everything()
        self._ended = True
        self._emit(EngineStopped(description))

    @property
    def alive(self) -> bool:
        return not self.closed and not self._ended

    def _emit(self, event: Event) -> None:
        self._events.put(event)
        with contextlib.suppress(BlockingIOError, OSError):  # a wake-up is already pending, or the engine is closing
            self._wake_writer.send(b"!")
