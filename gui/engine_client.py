"""The window's end of the engine: requests out, and events read as they arrive, without blocking the event loop.

A QSocketNotifier watches the engine's pipe (or, in-process, its wake-up socket); each event is
stamped on arrival and handed on as a signal on the GUI thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSocketNotifier, Signal, Slot

from core.engine import messages as m


class EngineClient(QObject):
    model_progressed = Signal(float, str)
    model_loaded = Signal(object)     # messages.ModelLoaded
    model_failed = Signal(str)
    reply_started = Signal(object)    # messages.ReplyStarted
    reply_compute_started = Signal(object)  # messages.ReplyComputeStarted
    reply_progressed = Signal(object)  # messages.ReplyProgress: the prompt's pass, layer by layer
    server_reported = Signal(object)  # messages.ReplyServerReport: a remote server's own account of the reply
    token_arrived = Signal(object)    # messages.Delivered holding a ReplyToken, with its arrival stamp
    reply_finished = Signal(object)   # messages.ReplyFinished
    reply_refused = Signal(object)    # messages.ReplyRefused
    lab_progressed = Signal(object)   # messages.LabProgress
    lab_row_measured = Signal(object)  # messages.LabRow
    lab_finished = Signal(object)     # messages.LabFinished
    lab_failed = Signal(object)       # messages.LabFailed
    engine_stopped = Signal(object)   # messages.EngineStopped

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
        signals = {m.ModelLoaded: self.model_loaded, m.ReplyStarted: self.reply_started,
                   m.ReplyComputeStarted: self.reply_compute_started, m.ReplyProgress: self.reply_progressed,
                   m.ReplyServerReport: self.server_reported,
                   m.ReplyFinished: self.reply_finished, m.ReplyRefused: self.reply_refused,
                   m.LabProgress: self.lab_progressed, m.LabRow: self.lab_row_measured,
                   m.LabFinished: self.lab_finished, m.LabFailed: self.lab_failed}
        for delivered in self.engine.take_events():
            event = delivered.event
            if isinstance(event, m.ReplyToken):
                self.token_arrived.emit(delivered)
            elif isinstance(event, m.ModelProgress):
                self.model_progressed.emit(event.fraction, event.message)
            elif isinstance(event, m.ModelFailed):
                self.model_failed.emit(event.message)
            elif isinstance(event, m.EngineStopped):
                self._notifier.setEnabled(False)
                self.engine_stopped.emit(event)
            else:
                signals[type(event)].emit(event)
