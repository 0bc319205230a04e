"""The window's end of the engine: requests out, and events read as they arrive, without blocking the event loop.

A QSocketNotifier watches the engine's pipe (or, in-process, its wake-up socket); each event is
stamped on arrival and handed on as a signal on the GUI thread. Requests are queued and written as the
socket takes them (a second notifier, on while some wait), so a stopped engine cannot freeze the window.
While a reply is running a watchdog listens for the engine: silent past REPLY_SILENCE_S (STOP_SILENCE_S
once Stop was asked) it is ended, and that reaches the window as one EngineStopped, as a death does.

While the engine stamps tokens closer together than a frame (25 Hz), the read notifier is held: the window's
frames read the pipe (drain()), or the hold's timer after READ_HOLD_MS where no frame comes. The window shows text
a frame at a time anyway, and waking the GUI thread for each token cost about half a millisecond of its CPU a
token, taken from decode on a small machine. A held token is stamped when a frame reads it, so its delivery
includes that wait. A slower token, the reply's end, or a read that finds nothing a frame after the last token lets
go of the hold, so a slow stream's tokens are read as they come. (A read that finds nothing sooner keeps it: on a
loaded machine frames bunch up, and the second of two finds the pipe empty while tokens still come fast.)
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QSocketNotifier, QTimer, Signal, Slot

from core.engine import messages as m
from core.engine.protocol import Engine
from core.timing.events import TokenEvent
from gui.frame_interval import FRAME_INTERVAL_MS

# The engine's sender speaks at least every 0.5 s (core/engine/process.py), so silence this long means stuck.
REPLY_SILENCE_S = 15.0
STOP_SILENCE_S = 5.0
WATCH_INTERVAL_MS = 500
# Tokens stamped closer together than a frame are read once a frame; without frames, every READ_HOLD_MS.
FAST_TOKEN_NS = FRAME_INTERVAL_MS * 1_000_000
READ_HOLD_MS = 2 * FRAME_INTERVAL_MS


class EngineClient(QObject):
    """One signal per kind of message; every message is handed on in one place, _on_readable."""

    model_progressed = Signal(object)  # messages.ModelProgress
    model_ready = Signal(object)  # messages.ModelReady
    model_failed = Signal(object)  # messages.ModelFailed
    # A list of messages.Delivered, each holding a reply job's JobEvent, JobDone or JobFailed with its arrival stamp:
    # one signal for the reply messages of one read, in order (a frame reads several tokens at once).
    reply_events_arrived = Signal(object)
    job_arrived = Signal(object)  # messages.JobEvent, JobDone or JobFailed of a job that is not a reply
    engine_stopped = Signal(object)  # messages.EngineStopped

    def __init__(self, engine: Engine, parent=None):
        super().__init__(parent)
        # Set by attach(), at the end of this constructor: an engine and its pipe's notifiers are always there.
        self.engine: Engine
        self._notifier: QSocketNotifier
        self._write_notifier: QSocketNotifier
        self._job_id = 0  # one id space for every kind of job, as the engine has one stop map
        self._replies: set[int] = set()  # reply jobs started and not yet done
        self._stopping: set[int] = set()  # of those, the ones asked to stop
        self._watchdog = QTimer(self)
        self._watchdog.setInterval(WATCH_INTERVAL_MS)
        self._watchdog.timeout.connect(self._watch)
        # Each message's signal, looked up once: reading a PySide signal attribute builds a new object each time.
        self._signals = {
            m.ModelProgress: self.model_progressed,
            m.ModelReady: self.model_ready,
            m.ModelFailed: self.model_failed,
            m.JobEvent: self.job_arrived,
            m.JobDone: self.job_arrived,
            m.JobFailed: self.job_arrived,
            m.EngineStopped: self.engine_stopped,
        }
        self.pace_reads = True  # hold reads between frames while tokens come fast (see the module's docstring)
        self._last_token: tuple[int, int] | None = None  # (reply id, engine stamp) of the newest token read
        self._held = False  # the read notifier is off until the next frame (never after the engine stopped)
        self._hold = QTimer(self)  # single shot: reading resumes, if no frame has drained the pipe first
        self._hold.setSingleShot(True)
        self._hold.setInterval(READ_HOLD_MS)
        self._hold.timeout.connect(self.drain)
        self.attach(engine)

    def attach(self, engine: Engine) -> None:
        """Talk to this engine from now on (a new one after the old one stopped)."""
        for name in ("_notifier", "_write_notifier"):
            notifier = getattr(self, name, None)  # none before the first engine
            if notifier is not None:
                notifier.setEnabled(False)
                notifier.deleteLater()
        self.engine = engine
        self._replies.clear()
        self._stopping.clear()
        self._watchdog.stop()
        self._held = False
        self._hold.stop()
        self._notifier = QSocketNotifier(engine.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_readable)
        self._write_notifier = QSocketNotifier(engine.fileno(), QSocketNotifier.Type.Write, self)
        self._write_notifier.setEnabled(False)
        self._write_notifier.activated.connect(self._on_writable)

    @property
    def held(self) -> bool:
        """Whether reads wait for the window's next frame (tokens are coming fast)."""
        return self._held

    @property
    def alive(self) -> bool:
        return self.engine.alive

    def start(self, spec: m.JobSpec) -> int:
        """Start a job; its id, which its events carry and stop() takes. Returns at once, whatever the engine's state."""
        self._job_id += 1
        if isinstance(spec, m.ReplyJob):
            self._replies.add(self._job_id)
        self.send(m.StartJob(self._job_id, spec))
        return self._job_id

    def stop(self, job_id: int) -> None:
        """Ask a job to stop; it still ends with its JobDone or JobFailed."""
        if job_id in self._replies:
            self._stopping.add(job_id)
        self.send(m.StopJob(job_id))

    def send(self, request: m.Request) -> None:
        """Queue the request for the engine; returns at once, whatever state the engine is in."""
        self.engine.send(request)
        self._write_notifier.setEnabled(self.engine.wants_to_write)
        if self._replies and not self._watchdog.isActive():
            self._watchdog.start()
        if self.engine.stop_unreported:  # the write found it dead: say so now, not at the next read
            QTimer.singleShot(0, self, self._on_readable)

    def end_engine(self, description: str) -> None:
        """End the engine now, whatever it is doing (Restart engine, a stuck engine), and report it as stopped."""
        if self.engine.alive:
            self.engine.end(description)
        self._on_readable()

    @Slot()
    def drain(self) -> None:
        """Hand on every event waiting now (the window's frames call it while reads are held; tests call it to apply
        an adopted model at once)."""
        self._on_readable()

    def close(self, timeout_s: float) -> bool:
        self._watchdog.stop()
        self._held = False
        self._hold.stop()
        for notifier in (self._notifier, self._write_notifier):
            notifier.setEnabled(False)
        return self.engine.close(timeout_s)

    @Slot()
    def _on_writable(self, *_) -> None:
        self.engine.flush()
        self._write_notifier.setEnabled(self.engine.wants_to_write)
        if self.engine.stop_unreported:
            self._on_readable()

    @Slot()
    def _watch(self) -> None:
        """A reply is running: read what has come (unless the frames are reading), then end an engine that has said
        nothing for too long."""
        if not self._held:
            self._on_readable()
        if not self._replies:
            self._watchdog.stop()
            return
        limit = STOP_SILENCE_S if self._stopping else REPLY_SILENCE_S
        silent = self.engine.silent_for_s()
        if self.engine.alive and silent > limit:
            waiting = "after Stop" if self._stopping else "with a reply running"
            self.end_engine(f"the engine stopped answering (silent for {silent:.0f} s {waiting}), so it was ended")

    @Slot()
    def _on_readable(self, *_) -> None:
        fast_tokens = None  # whether this read's tokens came faster than frames; None: it brought none
        replies: list[m.Delivered] = []  # this read's reply events, handed on together
        for delivered in self.engine.take_events():
            event = delivered.event
            if isinstance(event, (m.JobEvent, m.JobDone, m.JobFailed)) and event.job_id in self._replies:
                if not isinstance(event, m.JobEvent):
                    self._replies.discard(event.job_id)
                    self._stopping.discard(event.job_id)
                elif isinstance(event.event, TokenEvent):
                    fast_tokens = self._came_fast(event.job_id, event.event.timestamp_ns)
                replies.append(delivered)  # with its arrival stamp: the delivery delay
                continue
            if replies:  # in order: the reply events that came before this message first
                self.reply_events_arrived.emit(replies)
                replies = []
            if isinstance(event, m.EngineStopped):
                self._notifier.setEnabled(False)
                self._write_notifier.setEnabled(False)
                self._replies.clear()
                self._stopping.clear()
                self._watchdog.stop()
                self._held = False
                self._hold.stop()
            self._signals[type(event)].emit(event)
        if replies:
            self.reply_events_arrived.emit(replies)
        if fast_tokens and self.pace_reads and self._replies:
            self._hold_reads()
        elif fast_tokens is None and self._held and self._replies and self._last_token_fresh():
            self._hold.start()  # nothing yet, but the stream is still fast: the next frame (or this timer) reads
        elif self._held:
            self._release_reads()

    def _came_fast(self, reply_id: int, stamp_ns: int) -> bool:
        """Whether this token was stamped less than a frame after the reply's previous one."""
        previous, self._last_token = self._last_token, (reply_id, stamp_ns)
        return previous is not None and previous[0] == reply_id and stamp_ns - previous[1] < FAST_TOKEN_NS

    def _last_token_fresh(self) -> bool:
        """Whether the last token was stamped less than a frame ago (the engine stamps on this machine's clock)."""
        return self._last_token is not None and time.perf_counter_ns() - self._last_token[1] < FAST_TOKEN_NS

    def _hold_reads(self) -> None:
        """Tokens are coming faster than frames: the pipe is read by the frames (or the hold's timer) until they slow."""
        self._held = True
        self._notifier.setEnabled(False)
        self._hold.start()  # from now: it fires only where no frame reads first

    def _release_reads(self) -> None:
        self._held = False
        self._hold.stop()
        self._notifier.setEnabled(True)
