"""The race window: one prompt, A and B side by side on one clock, and the verdict.

By default A runs alone, then B, while the panes stay still (the window's painting would slow a local model);
then both play back in lockstep from Send, each at its own measured token times, marked PLAYBACK. Live mode runs
both at once and is marked LIVE, saying that they share the machine. A race saved as a file opens here again.
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.bounded_read import NotReadable, read_named_file
from core.errors import LatencyLabError
from core.race.config import EACH_ALONE, LIVE, MODE_WORDS, RaceConfig
from core.race.document import MAX_RACE_BYTES, RaceFileError, RaceRecord, read_race
from core.race.playback import Track
from core.race.sides import RaceSide, labels, side_summary
from core.timing.budget import judge
from core.timing.events import FinishedEvent, PrefillProgress, TokenEvent
from core.timing.export import write_text_file
from gui.frame_interval import FRAME_INTERVAL_MS
from gui.meter.budget_line import BudgetForm
from gui.race.race_client import RaceClient
from gui.race.race_pane import RacePane
from gui.race.side_form import SideForm
from gui.race.verdict_view import VerdictView
from gui.untrusted_text import plain_label

STATUS_INTERVAL_NS = 250_000_000  # while measuring, the status line changes at most 4 times a second
DEFAULT_PROMPT = "Explain in a few sentences why streaming makes a chatbot feel faster."
MODES = (
    (EACH_ALONE, "A, then B, each alone; then both played back from Send"),
    (LIVE, "Live: A and B at the same time (they share the CPU)"),
)
BANNERS = {
    "idle": (
        "#e8eaed",
        "#202124",
        "RACE: one prompt, two configurations. By default A runs alone, then B, and both "
        "are played back from Send on one clock.",
    ),
    "measuring": (
        "#e8eaed",
        "#202124",
        "MEASURING: A runs alone, then B. The panes stay still meanwhile, so the window takes no CPU from the replies.",
    ),
    "playback": ("#fde293", "#5f3b00", "PLAYBACK of measured runs: {mode}. Nothing is being generated now."),
    "live": (
        "#f6aea9",
        "#5c0b08",
        "LIVE: A and B are running now, at the same time. On one machine they share the "
        "CPU, so each may be slower than alone.",
    ),
    "stopped": (
        "#e8eaed",
        "#b00020",
        "NO VERDICT: the race was stopped midway, or a side could not run. What ran is shown as it was measured.",
    ),
    "live_done": (
        "#f6aea9",
        "#5c0b08",
        "LIVE race, finished: A and B ran at the same time, sharing the CPU. Play again replays it (as a playback).",
    ),
}


class RaceWindow(QDialog):
    race_shown = Signal(object)  # RaceRecord, once its panes show the whole race and the verdict

    def __init__(
        self, client, budget_keeper, parent=None, server_access=None, trust_remote_code=False, allow_pickle=False
    ):
        super().__init__(parent)
        self.setWindowTitle("Race — Latency Lab")
        self.budget_keeper = budget_keeper
        self.server_access = server_access or (lambda: (None, None))
        self._trust = (trust_remote_code, allow_pickle)
        self.record: RaceRecord | None = None
        self.document_text: str | None = None
        self.history: tuple[tuple[str, str], ...] = ()
        self.system_prompt = ""
        self.state = "idle"
        self._clock_start_ns = 0
        self._live_start_ns: int | None = None
        self._counts = {"A": 0, "B": 0}
        self._status_shown_ns = 0
        self.races = RaceClient(client, self)
        self._build()
        self._wire()
        self._set_state("idle")

    # -- construction ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.prompt_box = QLineEdit(DEFAULT_PROMPT)
        self.prompt_box.setObjectName("race_prompt")
        self.history_check = QCheckBox("after this chat's history")
        self.history_check.setToolTip(
            "Both sides get the open chat's turns before the prompt, so a side with the "
            "prompt cache on reuses them, as in a running chat."
        )
        self.mode_box = QComboBox()
        for mode, words in MODES:
            self.mode_box.addItem(words, mode)
        self.form_a, self.form_b = SideForm("A"), SideForm("B")
        self.budget_form = BudgetForm(self.budget_keeper.budget)
        self.run_button = QPushButton("Run race")
        self.run_button.setToolTip("Ctrl+Enter")
        self.stop_button = QPushButton("Stop")
        self.play_button = QPushButton("Play again")
        self.export_button = QPushButton("Export…")
        self.open_button = QPushButton("Open…")
        self.banner = plain_label()
        self.banner.setObjectName("race_banner")
        self.banner.setWordWrap(True)
        self.status = plain_label()
        self.status.setObjectName("race_status")
        self.status.setWordWrap(True)
        self.pane_a, self.pane_b = RacePane("A"), RacePane("B")
        self.verdict = VerdictView()

        prompt_row = QHBoxLayout()
        prompt_row.addWidget(QLabel("Prompt"))
        prompt_row.addWidget(self.prompt_box, stretch=1)
        prompt_row.addWidget(self.history_check)
        forms = QHBoxLayout()
        forms.addWidget(self.form_a)
        forms.addWidget(self.form_b)
        controls = QHBoxLayout()
        controls.addWidget(self.mode_box)
        controls.addWidget(self.budget_form)
        controls.addStretch(1)
        for button in (self.run_button, self.stop_button, self.play_button, self.export_button, self.open_button):
            controls.addWidget(button)
        panes = QSplitter(Qt.Orientation.Horizontal)
        panes.addWidget(self.pane_a)
        panes.addWidget(self.pane_b)
        panes.setChildrenCollapsible(False)
        setup = QWidget()
        setup_layout = QVBoxLayout(setup)
        setup_layout.setContentsMargins(0, 0, 0, 0)
        setup_layout.addLayout(prompt_row)
        setup_layout.addLayout(forms)
        setup_layout.addLayout(controls)
        layout = QVBoxLayout(self)
        layout.addWidget(setup)
        layout.addWidget(self.banner)
        layout.addWidget(self.status)
        layout.addWidget(self.verdict)
        layout.addWidget(panes, stretch=1)
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_INTERVAL_MS)
        screen = self.screen().availableGeometry() if self.screen() else None
        if screen is not None:
            self.resize(min(1380, int(screen.width() * 0.97)), min(940, int(screen.height() * 0.97)))

    def _wire(self) -> None:
        self.run_button.clicked.connect(self.run)
        QShortcut(QKeySequence("Ctrl+Return"), self, activated=self.run)
        self.stop_button.clicked.connect(self.stop)
        self.play_button.clicked.connect(self.play)
        self.export_button.clicked.connect(self._export_dialog)
        self.open_button.clicked.connect(self._open_dialog)
        self.frame_timer.timeout.connect(self._on_frame)
        self.budget_form.budget_changed.connect(self.budget_keeper.set_budget)
        self.budget_keeper.changed.connect(self._on_budget_changed)
        self.races.progressed.connect(self._on_progress)
        self.races.started.connect(self._on_started)
        self.races.event_arrived.connect(self._on_event)
        self.races.finished.connect(self._on_finished)
        self.races.failed.connect(self._on_failed)

    # -- setting up a race ----------------------------------------------------------------------

    def set_up(
        self,
        a: RaceSide,
        b: RaceSide,
        prompt: str | None = None,
        history: tuple[tuple[str, str], ...] = (),
        system_prompt: str = "",
    ) -> None:
        self.form_a.set_side(a)
        self.form_b.set_side(b)
        for form in (self.form_a, self.form_b):
            form.offer_models([a.model, b.model])
        if prompt:
            self.prompt_box.setText(prompt)
        self.history, self.system_prompt = history, system_prompt
        turns = len(history)
        self.history_check.setEnabled(bool(turns))
        self.history_check.setText(
            f"after this chat's {turns} messages" if turns else "after this chat's history (none yet)"
        )
        self.history_check.setChecked(False)
        self.prompt_box.setFocus()

    def config(self) -> RaceConfig:
        """The race the form describes; InvalidSettingsError in one line."""
        _, timeout = self.server_access()
        live = self.mode_box.currentData() == LIVE
        history = self.history if self.history_check.isChecked() else ()
        return RaceConfig(
            self.prompt_box.text(),
            self.form_a.side(timeout),
            self.form_b.side(timeout),
            live=live,
            system_prompt=self.system_prompt,
            history=history,
            budget=self.budget_keeper.budget,
        )

    # -- actions --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.races.running

    @property
    def playing(self) -> bool:
        return self.frame_timer.isActive() and self.state == "playback"

    @Slot()
    def run(self) -> None:
        if self.running:
            return
        try:
            config = self.config()
        except LatencyLabError as error:
            self._say(f"Settings refused: {error}", error=True)
            return
        self.frame_timer.stop()
        key, _ = self.server_access()
        label_a, label_b = labels(config.a, config.b)
        clock = "LIVE" if config.live else "MEASURING"
        for pane, side, label in ((self.pane_a, config.a, label_a), (self.pane_b, config.b, label_b)):
            pane.begin(label, side_summary(side), side.streaming, clock)
            pane.show_state("waiting")
        self.record, self.document_text = None, None
        self._counts = {"A": 0, "B": 0}
        self._live_start_ns = None
        self.verdict.show_note(
            "Running… the verdict appears once both sides have run" + ("." if config.live else " and been played back.")
        )
        if self.races.run(config, key, *self._trust):
            self._set_state("live" if config.live else "measuring")
            self.stop_button.setFocus()  # the focused prompt is disabled now; Enter or Space then stops
            self._say("Starting…")

    @Slot()
    def stop(self) -> None:
        """Stop the race (what ran is kept and shown), or a playback where it is."""
        if self.running:
            self.races.stop()
            self._say("Stopping… what ran is kept.")
        elif self.frame_timer.isActive():
            self.frame_timer.stop()
            self._say("Playback stopped.")
            self._update_controls()

    @Slot()
    def play(self) -> None:
        """Play the race shown from Send, both sides at their own measured times."""
        if self.record is None or self.running:
            return
        self._load_panes(self.record, "PLAYBACK")
        self._set_state("playback")
        self.verdict.show_note("Playing back… the verdict appears at the end.")
        self._clock_start_ns = time.perf_counter_ns()
        self.frame_timer.start()
        self._update_controls()

    def open_race(self, path: str | Path) -> bool:
        try:
            data = read_named_file(path, MAX_RACE_BYTES)
        except NotReadable as refused:
            self._say(f"Cannot open {Path(path).name}: {refused}", error=True)
            return False
        return self.show_race(data, Path(path).name)

    def show_race(self, data: bytes, name: str, autoplay: bool = True) -> bool:
        """A race file's bytes: its settings in the forms, then played back (or shown whole)."""
        try:
            record = read_race(data)
        except RaceFileError as error:
            self._say(f"Cannot open {name}: {error}", error=True)
            return False
        if self.running:
            self._say("Stop the running race before opening another.", error=True)
            return False
        self.record, self.document_text = record, data.decode("utf-8")
        self.set_up(record.config.a, record.config.b, record.prompt)
        self.mode_box.setCurrentIndex(self.mode_box.findData(record.mode))
        self._say(f"{name}: {record.status}")
        if autoplay:
            self.play()
        else:
            self._show_whole(record, "LIVE" if record.mode == LIVE else "PLAYBACK")
        return True

    def export_race(self, path: str | Path) -> None:
        write_text_file(path, self.document_text or "")

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.frame_timer.stop()
        self.races.stop()
        super().closeEvent(event)

    # -- the engine's messages ------------------------------------------------------------------

    @Slot(str)
    def _on_progress(self, message: str) -> None:
        self._say(message)
        for pane in (self.pane_a, self.pane_b):
            if message.startswith(f"{pane.name}:"):
                pane.show_state(message.partition(": ")[2])

    @Slot(str, object)
    def _on_started(self, sides: str, start_ns: int) -> None:
        if sides == "AB":  # live: both sides share this Send; the panes now follow the clock
            self._live_start_ns = start_ns
            self.frame_timer.start()

    @Slot(str, object)
    def _on_event(self, side: str, event) -> None:
        pane = self.pane_a if side == "A" else self.pane_b
        if self.state == "live" and self._live_start_ns is not None:
            if isinstance(event, TokenEvent):
                pane.feed(event.text, (event.timestamp_ns - self._live_start_ns) / 1e9, event.reasoning)
            elif isinstance(event, FinishedEvent):
                pane.complete(event.tail_text)
            return
        # Measuring: only a count, at most four times a second, so the window stays out of the replies' way.
        if isinstance(event, TokenEvent):
            self._counts[side] += 1
        now = time.perf_counter_ns()
        if now - self._status_shown_ns >= STATUS_INTERVAL_NS or isinstance(event, FinishedEvent):
            self._status_shown_ns = now
            if isinstance(event, PrefillProgress):
                pane.show_state(f"running alone: reading the prompt, {event.fraction:.0%}")
            elif isinstance(event, FinishedEvent):
                pane.show_state(f"ran alone: {self._counts[side]} tokens; waiting for the other side")
            else:
                pane.show_state(f"running alone: {self._counts[side]} tokens")

    @Slot(str)
    def _on_finished(self, document: str) -> None:
        was_live = self.state == "live"
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
        self._update_controls()

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self.frame_timer.stop()
        self._set_state("idle")
        self._say(f"The race failed: {message}", error=True)
        self.verdict.show_note("No verdict: the race failed.")

    # -- the clock ------------------------------------------------------------------------------

    @Slot()
    def _on_frame(self) -> None:
        start = self._live_start_ns if self.state == "live" else self._clock_start_ns
        if start is None:
            return
        now_s = (time.perf_counter_ns() - start) / 1e9
        for pane in (self.pane_a, self.pane_b):
            pane.advance(now_s)
        if (
            self.state == "playback"
            and self.pane_a.done
            and self.pane_b.done
            and now_s >= max(self.pane_a.end_s, self.pane_b.end_s)
        ):
            self.frame_timer.stop()
            self._show_verdict(self.record)
            self.race_shown.emit(self.record)

    def _load_panes(self, record: RaceRecord, clock_word: str) -> None:
        for pane, side in ((self.pane_a, record.a), (self.pane_b, record.b)):
            pane.begin(side.label, side.summary, side.streaming, clock_word)
            if side.trace is None:
                pane.show_state(side.state or "not run")
                continue
            pane.load(Track.of(side.trace, side.streaming))
            pane.show_state("playing back")

    def _show_whole(self, record: RaceRecord, clock_word: str) -> None:
        """The race drawn at once, as it ended: a live race's last frame, or what ran of a stopped one."""
        self._load_panes(record, clock_word)
        end = max(self.pane_a.end_s, self.pane_b.end_s)
        for pane in (self.pane_a, self.pane_b):
            pane.advance(end)
        if record.verdict is None:
            self._set_state("stopped")
        else:
            self._set_state("live_done" if clock_word == "LIVE" else "playback")
        self._show_verdict(record)
        self.race_shown.emit(record)

    def _show_verdict(self, record: RaceRecord) -> None:
        budget = self.budget_keeper.budget
        for pane, side in ((self.pane_a, record.a), (self.pane_b, record.b)):
            if side.trace is None:
                continue
            metrics = side.trace.metrics()
            pane.show_state(
                f"{side.state}: TTFT {_ms(metrics.ttft_s)}, TPOT {_ms(metrics.tpot_s)}, "
                f"E2E {_ms(metrics.e2e_s)}, {side.trace.output_tokens} tokens"
            )
            pane.show_budget(judge(side.trace, side.streaming, budget))
            pane.show_notes(side.notes)
        # One character scale for both staircases, so the taller one is the longer reply, not a different axis.
        tallest = max(self.pane_a.characters, self.pane_b.characters)
        for pane in (self.pane_a, self.pane_b):
            pane.fit_height(tallest)
        self.verdict.show_record(record, budget)
        self._update_controls()

    # -- small things ---------------------------------------------------------------------------

    @Slot(object)
    def _on_budget_changed(self, budget) -> None:
        self.budget_form.set_budget(budget)
        if self.record is not None and not self.frame_timer.isActive() and not self.running:
            self._show_verdict(self.record)

    def _set_state(self, state: str) -> None:
        self.state = state
        background, color, text = BANNERS[state]
        if state == "playback" and self.record is not None:
            text = text.format(mode=MODE_WORDS[self.record.mode])
        self.banner.setText(text)
        self.banner.setStyleSheet(f"background: {background}; color: {color}; font-weight: 700; padding: 4px;")
        self._update_controls()

    def _update_controls(self) -> None:
        running = self.running
        if not running and self.stop_button.hasFocus():
            self.run_button.setFocus()  # not left to Qt, which hands it to the next field (the budget's)
        self.run_button.setEnabled(not running)
        self.stop_button.setEnabled(running or self.frame_timer.isActive())
        self.play_button.setEnabled(not running and self.record is not None and self.record.verdict is not None)
        self.export_button.setEnabled(not running and self.document_text is not None)
        self.open_button.setEnabled(not running)
        for widget in (self.form_a, self.form_b, self.prompt_box, self.mode_box, self.history_check):
            widget.setEnabled(not running and (widget is not self.history_check or bool(self.history)))

    def _say(self, message: str, error: bool = False) -> None:
        self.status.setStyleSheet("color: #b00020;" if error else "")
        self.status.setText(message)

    @Slot()
    def _export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export race", "race.json", "Race (*.json)")
        if path:
            try:
                self.export_race(path)
                self._say(f"Exported the race to {Path(path).name}: File → Replay a trace… opens it again.")
            except OSError as error:
                self._say(f"Could not export: {error.strerror or error}", error=True)

    @Slot()
    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a race", "", "Race (*.json)")
        if path:
            self.open_race(path)


def _ms(value: float | None) -> str:
    from core.race.verdict import span

    return "—" if value is None else span(value)
