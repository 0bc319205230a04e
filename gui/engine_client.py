"""The window's end of the engine: requests out, and events read as they arrive, without blocking the event loop.

A QSocketNotifier watches the engine's pipe (or, in-process, its wake-up socket); each event is
stamped on arrival and handed on as a signal on the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSocketNotifier, Signal, Slot

from core.engine import messages as m


class EngineClient(QObject):
    """One signal per kind of message; every message is handed on in one place, _on_readable."""

    model_progressed = Signal(object)    # messages.ModelProgress
    model_loaded = Signal(object)        # messages.ModelLoaded
    model_failed = Signal(object)        # messages.ModelFailed
    reply_event_arrived = Signal(object)  # messages.Delivered holding a ReplyEvent, with its arrival stamp
    lab_progressed = Signal(object)      # messages.LabProgress
    lab_row_measured = Signal(object)    # messages.LabRow
    lab_finished = Signal(object)        # messages.LabFinished
    lab_failed = Signal(object)          # messages.LabFailed
    engine_stopped = Signal(object)      # messages.EngineStopped

    def __init__(self, engine, parent=None):
        super().__init__(parent)
        self.engine = None
        self._notifier: QSocketNotifier | None = None
        self.attach(engine)

    def attach(self, engine) -> None:
        """Talk to this engine from now on (a new one after the old one stopped)."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier.deleteLater()
        self.engine = engine
        self._notifier = QSocketNotifier(engine.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_readable)

    @property
    def alive(self) -> bool:
        return self.engine is not None and self.engine.alive

    def send(self, request: object) -> None:
        self.engine.send(request)

    def drain(self) -> None:
        """Hand on every event waiting now (tests call it to apply an adopted model at once)."""
        self._on_readable()

    def close(self, timeout_s: float) -> bool:
        if self._notifier is not None:
            self._notifier.setEnabled(False)
        return self.engine.close(timeout_s)

    @Slot()
    def _on_readable(self, *_) -> None:
        signals = {m.ModelProgress: self.model_progressed, m.ModelLoaded: self.model_loaded,
                   m.ModelFailed: self.model_failed, m.LabProgress: self.lab_progressed,
                   m.LabRow: self.lab_row_measured, m.LabFinished: self.lab_finished, m.LabFailed: self.lab_failed,
                   m.EngineStopped: self.engine_stopped}
        for delivered in self.engine.take_events():
            event = delivered.event
            if isinstance(event, m.ReplyEvent):
                self.reply_event_arrived.emit(delivered)  # with its arrival stamp: the delivery delay
                continue
            if isinstance(event, m.EngineStopped):
                self._notifier.setEnabled(False)
            signals[type(event)].emit(event)
