"""The engine's seam, typed: what the window and the CLI call on an engine, met by the engine process and the in-process engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.engine.messages import Delivered, EngineStopped, Request


class Engine(Protocol):
    """Requests in (send), timed events out (take_events), watched through fileno() from an event loop; the window
    holds one of these and never knows which."""

    closed: bool

    @property
    def alive(self) -> bool: ...

    @property
    def wants_to_write(self) -> bool:
        """Requests wait for the pipe to take them: watch fileno() for writing and call flush()."""
        ...

    @property
    def stop_unreported(self) -> bool:
        """The engine has ended and take_events() has not handed that on yet."""
        ...

    def send(self, request: Request) -> None: ...

    def flush(self) -> None: ...

    def fileno(self) -> int: ...

    def silent_for_s(self) -> float:
        """Seconds since the engine was last heard (events or heartbeats); what the window's watchdog reads."""
        ...

    def take_events(self) -> list[Delivered]: ...

    def end(self, description: str) -> EngineStopped | None:
        """Stop it now (stuck or not), reporting it stopped with this description."""
        ...

    def close(self, timeout_s: float = ...) -> bool:
        """Stop every job and let go of the engine; False when something could not be stopped in time."""
        ...


if TYPE_CHECKING:  # mypy proves both engines meet the Protocol
    from core.engine.in_process import InProcessEngine
    from core.engine.process import EngineProcess

    _ENGINES: tuple[type[Engine], ...] = (InProcessEngine, EngineProcess)
