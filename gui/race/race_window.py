"""The race window: one prompt, A and B side by side on one clock, and the verdict.

By default A runs alone, then B, while the panes stay still (the window's painting would slow a local model);
then both play back in lockstep from Send, each at its own measured token times, marked PLAYBACK. Live mode runs
both at once and is marked LIVE, saying that they share the machine. A race saved as a file opens here again.
This file lays out the forms, the panes and the verdict and draws what the race's controller
(gui/race/race_controller.py: the states, the engine, the clock, the files) reports.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
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

from core.errors import LatencyLabError
from core.race.config import EACH_ALONE, LIVE, MODE_WORDS, RaceConfig
from core.race.document import RaceRecord
from core.race.playback import Track
from core.race.sides import RaceSide, labels, side_summary
from core.timing.budget import judge
from gui.meter.budget_line import BudgetForm
from gui.race.race_controller import RaceController, RaceState
from gui.race.race_pane import RacePane
from gui.race.side_form import SideForm
from gui.race.verdict_view import VerdictView
from gui.untrusted_text import plain_label

DEFAULT_PROMPT = "Explain in a few sentences why streaming makes a chatbot feel faster."
MODES = (
    (EACH_ALONE, "A, then B, each alone; then both played back from Send"),
    (LIVE, "Live: A and B at the same time (they share the CPU)"),
)
BANNERS = {
    RaceState.IDLE: (
        "#e8eaed",
        "#202124",
        "RACE: one prompt, two configurations. By default A runs alone, then B, and both "
        "are played back from Send on one clock.",
    ),
    RaceState.MEASURING: (
        "#e8eaed",
        "#202124",
        "MEASURING: A runs alone, then B. The panes stay still meanwhile, so the window takes no CPU from the replies.",
    ),
    RaceState.PLAYBACK: ("#fde293", "#5f3b00", "PLAYBACK of measured runs: {mode}. Nothing is being generated now."),
    RaceState.LIVE: (
        "#f6aea9",
        "#5c0b08",
        "LIVE: A and B are running now, at the same time. On one machine they share the "
        "CPU, so each may be slower than alone.",
    ),
    RaceState.STOPPED: (
        "#e8eaed",
        "#b00020",
        "NO VERDICT: the race was stopped midway, or a side could not run. What ran is shown as it was measured.",
    ),
    RaceState.LIVE_DONE: (
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
        self.history: tuple[tuple[str, str], ...] = ()
        self.system_prompt = ""
        self.controller = RaceController(client, trust_remote_code, allow_pickle, self)
        self._build()
        self._panes = {"A": self.pane_a, "B": self.pane_b}
        self._wire()
        self._on_state(self.controller.state)

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
        screen = self.screen().availableGeometry() if self.screen() else None
        if screen is not None:
            self.resize(min(1380, int(screen.width() * 0.97)), min(940, int(screen.height() * 0.97)))

    def _wire(self) -> None:
        self.run_button.clicked.connect(self.run)
        QShortcut(QKeySequence("Ctrl+Return"), self, self.run)
        self.stop_button.clicked.connect(self.stop)
        self.play_button.clicked.connect(self.play)
        self.export_button.clicked.connect(self._export_dialog)
        self.open_button.clicked.connect(self._open_dialog)
        self.budget_form.budget_changed.connect(self.budget_keeper.set_budget)
        self.budget_keeper.changed.connect(self._on_budget_changed)
        race = self.controller
        race.state_changed.connect(self._on_state)
        race.status_posted.connect(self._say)
        race.side_noted.connect(self._on_side_noted)
        race.token_arrived.connect(self._on_token)
        race.side_finished.connect(self._on_side_finished)
        race.record_loaded.connect(self._on_record_loaded)
        race.clock_ticked.connect(self._on_clock)
        race.race_ended.connect(self._on_race_ended)
        race.race_opened.connect(self._on_race_opened)
        race.race_failed.connect(self._on_race_failed)

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

    @Slot()
    def run(self) -> None:
        if self.controller.running:
            return
        try:
            config = self.config()
        except LatencyLabError as error:
            self._say(f"Settings refused: {error}", error=True)
            return
        key, _ = self.server_access()
        label_a, label_b = labels(config.a, config.b)
        clock = "LIVE" if config.live else "MEASURING"
        for pane, side, label in ((self.pane_a, config.a, label_a), (self.pane_b, config.b, label_b)):
            pane.begin(label, side_summary(side), side.streaming, clock)
            pane.show_state("waiting")
        self.verdict.show_note(
            "Running… the verdict appears once both sides have run" + ("." if config.live else " and been played back.")
        )
        if self.controller.run(config, key):
            self.stop_button.setFocus()  # the focused prompt is disabled now; Enter or Space then stops

    @Slot()
    def stop(self) -> None:
        """Stop the race (what ran is kept and shown), or a playback where it is."""
        self.controller.stop()
        self._update_controls()

    @Slot()
    def play(self) -> None:
        """Play the race shown from Send, both sides at their own measured times."""
        self.controller.play()

    def open_race(self, path: str | Path) -> bool:
        return self.controller.open_race(path)

    def show_race(self, data: bytes, name: str) -> bool:
        """A race file's bytes: its settings in the forms, then played back (a stopped race is shown whole)."""
        return self.controller.show_race(data, name)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.controller.shutdown()
        super().closeEvent(event)

    def reject(self) -> None:
        """Esc hides the window: the race stops with it, as Stop stops it (what ran is kept, shown when it opens
        again). It ran on hidden, and the chat's next reply waited behind it with nothing to say why."""
        self.controller.stop()
        super().reject()

    # -- what the controller reports ------------------------------------------------------------

    @Slot(object)
    def _on_state(self, state: RaceState) -> None:
        background, color, text = BANNERS[state]
        record = self.controller.record
        if state is RaceState.PLAYBACK and record is not None:
            text = text.format(mode=MODE_WORDS[record.mode])
        self.banner.setText(text)
        self.banner.setStyleSheet(f"background: {background}; color: {color}; font-weight: 700; padding: 4px;")
        self._update_controls()

    @Slot(str, str)
    def _on_side_noted(self, side: str, words: str) -> None:
        self._panes[side].show_state(words)

    @Slot(str, object, float)
    def _on_token(self, side: str, token, at_s: float) -> None:
        self._panes[side].feed(token.text, at_s, token.reasoning)

    @Slot(str, str)
    def _on_side_finished(self, side: str, tail_text: str) -> None:
        self._panes[side].complete(tail_text)

    @Slot(object, str)
    def _on_record_loaded(self, record: RaceRecord, clock_word: str) -> None:
        for pane, side in ((self.pane_a, record.a), (self.pane_b, record.b)):
            pane.begin(side.label, side.summary, side.streaming, clock_word)
            if side.trace is None:
                pane.show_state(side.state or "not run")
                continue
            pane.load(Track.of(side.trace, side.streaming))
            pane.show_state("playing back")
        self.verdict.show_note("Playing back… the verdict appears at the end.")

    @Slot(float)
    def _on_clock(self, now_s: float) -> None:
        for pane in (self.pane_a, self.pane_b):
            pane.advance(now_s)

    @Slot(object)
    def _on_race_ended(self, record: RaceRecord) -> None:
        self._show_verdict(record)
        self.race_shown.emit(record)

    @Slot(object)
    def _on_race_opened(self, record: RaceRecord) -> None:
        self.set_up(record.config.a, record.config.b, record.prompt)
        self.mode_box.setCurrentIndex(self.mode_box.findData(record.mode))

    @Slot(str)
    def _on_race_failed(self, message: str) -> None:
        self._say(f"The race failed: {message}", error=True)
        self.verdict.show_note("No verdict: the race failed.")

    # -- the verdict ----------------------------------------------------------------------------

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
        race = self.controller
        if race.record is not None and not race.clock_running and not race.running:
            self._show_verdict(race.record)

    def _update_controls(self) -> None:
        race = self.controller
        running = race.running
        if not running and self.stop_button.hasFocus():
            self.run_button.setFocus()  # not left to Qt, which hands it to the next field (the budget's)
        self.run_button.setEnabled(not running)
        self.stop_button.setEnabled(running or race.clock_running)
        self.play_button.setEnabled(not running and race.record is not None and race.record.verdict is not None)
        self.export_button.setEnabled(not running and race.document_text is not None)
        self.open_button.setEnabled(not running)
        for widget in (self.form_a, self.form_b, self.prompt_box, self.mode_box, self.history_check):
            widget.setEnabled(not running and (widget is not self.history_check or bool(self.history)))

    @Slot(str, bool)
    def _say(self, message: str, error: bool = False) -> None:
        self.status.setStyleSheet("color: #b00020;" if error else "")
        self.status.setText(message)

    @Slot()
    def _export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export race", "race.json", "Race (*.json)")
        if path:
            try:
                self.controller.export_race(path)
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
