"""The race window's end of the engine: a race job started and stopped, its messages back as signals."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from core.backend.load_options import LoadOptions
from core.engine import messages as m
from core.race.config import RaceConfig


class RaceClient(QObject):
    progressed = Signal(str)
    started = Signal(str, object)  # "A", "B" or "AB" (live), and its request start (perf_counter_ns, past 32 bits)
    event_arrived = Signal(str, object)  # side, a core.timing.events event
    finished = Signal(str)  # the race file's JSON text (core/race/document.py)
    failed = Signal(str)

    def __init__(self, client, parent=None):
        super().__init__(parent)
        self.client = client  # gui.engine_client.EngineClient: the window's, shared with the chat
        self._race_id = 0
        self.running = False
        client.job_arrived.connect(self._on_arrived)
        client.engine_stopped.connect(self._on_engine_stopped)

    def run(
        self,
        config: RaceConfig,
        api_key: str | None = None,
        trust_remote_code: bool = False,
        allow_pickle: bool = False,
    ) -> bool:
        """False, with failed emitted, when the engine cannot take it now."""
        if self.running:
            return False
        if not self.client.alive:
            self.failed.emit("the engine has stopped: Chat → Restart engine starts a new one")
            return False
        self.running = True
        options = LoadOptions(trust_remote_code, allow_pickle, api_key)
        self._race_id = self.client.start(m.RaceJob(config, options))
        return True

    @Slot()
    def stop(self) -> None:
        if self.running:
            self.client.stop(self._race_id)

    @Slot(object)
    def _on_arrived(self, message: m.JobEvent | m.JobDone | m.JobFailed) -> None:
        if message.job_id != self._race_id or not self.running:
            return
        if isinstance(message, m.JobDone):
            from core.race.document import race_json
            from core.race.runner import RaceResult

            self.running = False
            if isinstance(message.result, RaceResult):
                self.finished.emit(race_json(message.result))  # the race file's text: played back and saved
            else:
                self.failed.emit(f"the engine sent no race result ({type(message.result).__name__})")
        elif isinstance(message, m.JobFailed):
            self.running = False
            self.failed.emit(message.message)
        elif isinstance(message.event, m.Progress):
            self.progressed.emit(message.event.message)
        elif isinstance(message.event, m.SidesStarted):
            self.started.emit(message.event.sides, message.event.request_start_ns)
        elif isinstance(message.event, m.SideEvent):
            self.event_arrived.emit(message.event.side, message.event.event)

    @Slot(object)
    def _on_engine_stopped(self, stopped) -> None:
        if self.running:
            self.running = False
            self.failed.emit(f"the engine stopped during the race ({stopped.description})")
