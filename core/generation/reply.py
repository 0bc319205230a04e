"""What every reply offers its caller, local or over the wire: stop, wait for the end, or run it to the end."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.timing.events import FinishedEvent, TokenEvent
    from core.timing.trace import ReplyTrace


class Reply(ABC):
    """Shared by LocalReply (local) and RemoteReply (a server's): a subclass sets stop_event, trace, decode_loop and
    _done, and defines prompt_tokens, start and __iter__; the engine, the CLI and the lab use nothing else."""

    stop_event: threading.Event
    trace: ReplyTrace | None  # None until started
    decode_loop: str  # what produces the tokens, in words the meter shows
    decode_loop_note: str | None
    _done: threading.Event

    @property
    @abstractmethod
    def prompt_tokens(self) -> int: ...

    @abstractmethod
    def start(self, request_start_ns: int | None = None) -> Reply:
        """Begin the work on its own thread; request_start_ns is when the user asked (TTFT counts from it)."""

    @abstractmethod
    def __iter__(self) -> Iterator[TokenEvent | FinishedEvent]:
        """Each token as it comes, then the finish."""

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
