"""The race's state machine, free of widgets: its states, the race client, the playback clock, race files.

It runs a race through the engine (gui/race/race_client.py), plays a finished one back on one clock from Send,
and reads and writes race files through core/race/document.py. The race window (gui/race/race_window.py) lays
out the panes, the forms and the verdict, and draws what this reports in signals.
"""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot

from core.bounded_read import NotReadable, read_named_file
from core.race.config import LIVE, MODE_WORDS, RaceConfig
from core.race.document import MAX_RACE_BYTES, RaceFileError, RaceRecord, read_race
from core.race.playback import Track
from core.timing.events import FinishedEvent, PrefillProgress, TokenEvent
from core.timing.export import write_text_file
from gui.frame_interval import frame_timer
from gui.race.race_client import RaceClient

STATUS_INTERVAL_NS = 250_000_000  # while measuring, a side's state changes at most 4 times a second


class RaceState(Enum):
    """What the race window shows: each has its banner, and says what Stop and the clock do."""

    IDLE = "idle"  # nothing run yet, or the race failed
    MEASURING = "measuring"  # A runs alone, then B; the panes stay still
    LIVE = "live"  # A and B run now, at the same time; the panes follow the clock
    PLAYBACK = "playback"  # measured runs played back from Send (and kept there, whole, once played)
    STOPPED = "stopped"  # stopped midway, or a side could not run: what ran, shown whole, with no verdict
    LIVE_DONE = "live_done"  # a live race has finished and is shown whole


class RaceController(QObject):
    state_changed = Signal(object)  # RaceState, each time one is entered (a playback after a playback too)
    status_posted = Signal(str, bool)  # a line for the window's status; whether it reports a problem
    side_noted = Signal(str, str)  # "A" or "B", and what that side is doing, in words
    token_arrived = Signal(str, object, float)  # live: the side, its TokenEvent, seconds since the shared Send
    side_finished = Signal(str, str)  # live: the side has sent its last token; the reply's tail text
    record_loaded = Signal(object, str)  # RaceRecord to draw from Send, and the clock's word (PLAYBACK, LIVE, …)
    clock_ticked = Signal(float)  # seconds since Send on the race's clock: what is due by then is shown
    race_ended = Signal(object)  # RaceRecord, now shown whole (played to its end, or drawn at once): its verdict
    race_opened = Signal(object)  # RaceRecord read from a file: its settings belong in the forms
    race_failed = Signal(str)  # why, in words: no verdict

    def __init__(self, client, trust_remote_code: bool = False, allow_pickle: bool = False, parent=None):
        super().__init__(parent)
        self._trust = (trust_remote_code, allow_pickle)
        self.state = RaceState.IDLE
        self.record: RaceRecord | None = None
        self.document_text: str | None = None  # the race file's text: what is exported
        self._clock_start_ns = 0
        self._live_start_ns: int | None = None
        self._end_s = 0.0  # the played record's last token, in seconds since Send
        self._counts = {"A": 0, "B": 0}
        self._status_shown_ns = 0
        self.races = RaceClient(client, self)
        self.frame_timer = frame_timer(self, self._on_frame)
        self.races.progressed.connect(self._on_progress)
        self.races.started.connect(self._on_started)
        self.races.event_arrived.connect(self._on_event)
        self.races.finished.connect(self._on_finished)
        self.races.failed.connect(self._on_failed)

    @property
    def running(self) -> bool:
        """A race is with the engine."""
        return self.races.running

    @property
    def clock_running(self) -> bool:
        """The panes follow the clock: a playback, or a live race."""
        return self.frame_timer.isActive()

    # -- what the window asks -------------------------------------------------------------------

    def run(self, config: RaceConfig, api_key: str | None = None) -> bool:
        """Start the race; False when it cannot start (the engine has stopped: race_failed says so)."""
        if self.running:
            return False
        self.frame_timer.stop()
        self.record, self.document_text = None, None
        self._counts = {"A": 0, "B": 0}
        self._live_start_ns = None
        if not self.races.run(config, api_key, *self._trust):
            return False
        self._set_state(RaceState.LIVE if config.live else RaceState.MEASURING)
        self._say("Starting…")
        return True

    @Slot()
    def stop(self) -> None:
        """Stop the race (what ran is kept and shown), or a playback where it is."""
        if self.running:
            self.races.stop()
            self._say("Stopping… what ran is kept.")
        elif self.frame_timer.isActive():
            self.frame_timer.stop()
            self._say("Playback stopped.")

    @Slot()
    def play(self) -> None:
        """Play the race from Send, both sides at their own measured times; only a race with a verdict (a stopped
        one has a side that never ran: it is shown whole instead)."""
        record = self.record
        if record is None or record.verdict is None or self.running:
            return
        self._end_s = _end_s(record)
        self.record_loaded.emit(record, "PLAYBACK")
        self._clock_start_ns = time.perf_counter_ns()
        self.frame_timer.start()
        self._set_state(RaceState.PLAYBACK)

    def open_race(self, path: str | Path) -> bool:
        try:
            data = read_named_file(path, MAX_RACE_BYTES)
        except NotReadable as refused:
            self._say(f"Cannot open {Path(path).name}: {refused}", error=True)
            return False
        return self.show_race(data, Path(path).name)

    def show_race(self, data: bytes, name: str) -> bool:
        """A race file's bytes: its settings to the forms, then played back (or, stopped midway, shown whole)."""
        try:
            record = read_race(data)
        except RaceFileError as error:
            self._say(f"Cannot open {name}: {error}", error=True)
            return False
        if self.running:
            self._say("Stop the running race before opening another.", error=True)
            return False
        self.record, self.document_text = record, data.decode("utf-8")
        self.race_opened.emit(record)
        self._say(f"{name}: {record.status}")
        if record.verdict is not None:
            self.play()
        else:
            self._show_whole(record, "LIVE" if record.mode == LIVE else "PLAYBACK")
        return True

    def export_race(self, path: str | Path) -> None:
        """The race file as it was run or opened; OSError for the caller to show."""
        write_text_file(path, self.document_text or "")

    def shutdown(self) -> None:
        """The window closes: the clock stops, and the race in the engine."""
        self.frame_timer.stop()
        self.races.stop()

    # -- the engine's messages ------------------------------------------------------------------

    @Slot(str)
    def _on_progress(self, message: str) -> None:
        self._say(message)
        side, colon, words = message.partition(": ")
        if colon and side in self._counts:
            self.side_noted.emit(side, words)

    @Slot(str, object)
    def _on_started(self, sides: str, start_ns: int) -> None:
        if sides == "AB":  # live: both sides share this Send; the panes now follow the clock
            self._live_start_ns = start_ns
            self.frame_timer.start()

    @Slot(str, object)
    def _on_event(self, side: str, event) -> None:
        if self.state is RaceState.LIVE and self._live_start_ns is not None:
            if isinstance(event, TokenEvent):
                self.token_arrived.emit(side, event, (event.timestamp_ns - self._live_start_ns) / 1e9)
            elif isinstance(event, FinishedEvent):
                self.side_finished.emit(side, event.tail_text)
            return
        # Measuring: only a count, at most four times a second, so the window stays out of the replies' way.
        if isinstance(event, TokenEvent):
            self._counts[side] += 1
        now = time.perf_counter_ns()
        if now - self._status_shown_ns >= STATUS_INTERVAL_NS or isinstance(event, FinishedEvent):
            self._status_shown_ns = now
            if isinstance(event, PrefillProgress):
                self.side_noted.emit(side, f"running alone: reading the prompt, {event.fraction:.0%}")
            elif isinstance(event, FinishedEvent):
                self.side_noted.emit(side, f"ran alone: {self._counts[side]} tokens; waiting for the other side")
            else:
                self.side_noted.emit(side, f"running alone: {self._counts[side]} tokens")

    @Slot(str)
    def _on_finished(self, document: str) -> None:
        was_live = self.state is RaceState.LIVE
        self.frame_timer.stop()
        try:
            record = read_race(document.encode("utf-8"))
        except RaceFileError as error:
            self._on_failed(f"the race's result could not be read: {error}")
            return
        self.record, self.document_text = record, document
        if record.stopped or record.verdict is None:
            # Stopped midway, or a side failed: no playback of a race that did not happen; what ran is shown whole.
            self._show_whole(record, "LIVE" if was_live else "MEASURED")
            self._say(record.status[:1].upper() + record.status[1:] + ".", error=True)
        elif was_live:
            self._show_whole(record, "LIVE")
            self._say("Finished. " + MODE_WORDS[LIVE] + ".")
        else:
            self._say("Both ran. Playing back from Send, each at its own measured times.")
            self.play()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.frame_timer.stop()
        self._set_state(RaceState.IDLE)
        self.race_failed.emit(message)

    # -- the clock ------------------------------------------------------------------------------

    @Slot()
    def _on_frame(self) -> None:
        start = self._live_start_ns if self.state is RaceState.LIVE else self._clock_start_ns
        if start is None:
            return
        now_s = (time.perf_counter_ns() - start) / 1e9
        self.clock_ticked.emit(now_s)
        if self.state is RaceState.PLAYBACK and now_s >= self._end_s:
            self.frame_timer.stop()
            self.race_ended.emit(self.record)

    def _show_whole(self, record: RaceRecord, clock_word: str) -> None:
        """The race drawn at once, as it ended: a live race's last frame, or what ran of a stopped one."""
        self.frame_timer.stop()
        self.record_loaded.emit(record, clock_word)
        self.clock_ticked.emit(_end_s(record))
        if record.verdict is None:
            self._set_state(RaceState.STOPPED)
        else:
            self._set_state(RaceState.LIVE_DONE if clock_word == "LIVE" else RaceState.PLAYBACK)
        self.race_ended.emit(record)

    def _set_state(self, state: RaceState) -> None:
        self.state = state
        self.state_changed.emit(state)

    def _say(self, message: str, error: bool = False) -> None:
        self.status_posted.emit(message, error)


def _end_s(record: RaceRecord) -> float:
    """When the later side's last token came, in seconds since Send (0 for a side that never ran)."""
    return max((Track.of(side.trace, side.streaming).end_s for side in record.sides if side.trace), default=0.0)
