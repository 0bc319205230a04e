"""One reply, local or over the wire: it owns its stop, its trace and one ordered stream of every event it makes."""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from core.timing.events import FinishedEvent, StopReason

if TYPE_CHECKING:
    from core.timing.events import ReplyEventKind
    from core.timing.trace import ReplyTrace


class Reply(ABC):
    """Shared by LocalReply (local) and RemoteReply (a server's). start() makes the trace and begins the backend's
    work (_begin), which hands every event to emit() on its own thread, the finish last; iterating yields each event
    in that one order (tokens, progress, the cache's and the server's reports, the finish), and the trace records each
    as it passes. The engine, the CLI, the lab and the race use nothing else."""

    # Past this with no event, the work is taken for dead: the reply ends in an error (None: wait for ever).
    event_timeout_s: float | None = None
    decode_loop: str  # what produces the tokens, in words the meter shows
    decode_loop_note: str | None = None

    def __init__(self, stop: threading.Event | None = None):
        self.stop_event = stop if stop is not None else threading.Event()
        self.trace: ReplyTrace | None = None  # None until started
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()  # the backend's work has returned
        self._finished = False  # the finish has been yielded

    @property
    @abstractmethod
    def prompt_tokens(self) -> int: ...

    @abstractmethod
    def _begin(self) -> None:
        """Start the work on its own thread: it emits every event, ends with a FinishedEvent, then sets _done."""

    def start(self, request_start_ns: int | None = None) -> Reply:
        """Begin the work on its own thread; request_start_ns is when the user asked (TTFT counts from it)."""
        from core.timing.trace import ReplyTrace

        start_ns = request_start_ns if request_start_ns is not None else time.perf_counter_ns()
        self.trace = ReplyTrace(start_ns, self.prompt_tokens)
        self._begin()
        return self

    def emit(self, event: ReplyEventKind) -> None:
        """Hand an event to whoever iterates (from the backend's thread): the one way events leave a reply."""
        self._events.put(event)

    def __iter__(self) -> Iterator[ReplyEventKind]:
        """Every event as it comes, the FinishedEvent last."""
        if self.trace is None:
            raise RuntimeError(f"call start() before iterating a {type(self).__name__}")
        while not self._finished:
            try:
                event = self._events.get(timeout=self.event_timeout_s)
            except queue.Empty:
                self.stop()
                event = self._abandoned()
            if isinstance(event, FinishedEvent):
                self._finished = True
            self.trace.record(event)
            yield event

    def _abandoned(self) -> FinishedEvent:
        """The finish of a reply whose work went silent past event_timeout_s."""
        assert self.trace is not None
        return FinishedEvent(
            StopReason.ERROR,
            self.trace.output_tokens,
            time.perf_counter_ns(),
            error=f"no token arrived within {self.event_timeout_s:g} s; generation was abandoned",
        )

    def stop(self) -> None:
        self.stop_event.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the reply's work has returned; True when it has (or when the reply never started)."""
        return self.trace is None or self._done.wait(timeout)

    def run_to_end(self, observe: Callable[[ReplyEventKind], None] | None = None) -> ReplyTrace:
        """Start if needed, pass every event to observe, wait for the work to return, and give the trace."""
        if self.trace is None:
            self.start()
        for event in self:
            if observe is not None:
                observe(event)
        self.join()
        assert self.trace is not None
        return self.trace
