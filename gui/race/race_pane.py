"""One side of the race on screen: its transcript, interval plot and "What the user saw", advanced by a shared clock."""

from __future__ import annotations

import html
from bisect import bisect_right

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QSizePolicy, QVBoxLayout, QWidget

from core.race.playback import Track
from core.timing.running_median import RunningMedian
from gui.meter.budget_line import mark_html
from gui.meter.interval_plot import IntervalPlot
from gui.meter.visible_text_plot import VisibleTextPlot
from gui.race.side_form import SIDE_COLORS
from gui.untrusted_text import plain_label, plain_tooltip


class RacePane(QWidget):
    """Tokens are fed with their own times (seconds since Send); advance(now) shows those due by now, once each.

    Playback feeds a whole recorded reply at once and lets the clock reveal it; live feeds tokens as they come.
    """

    def __init__(self, name: str, parent=None):
        super().__init__(parent)
        self.name = name
        self.header = QLabel()
        self.header.setObjectName(f"race_header_{name}")
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setWordWrap(True)
        # Two lines whatever the summary's length, so both panes' plots start at the same height.
        self.header.setFixedHeight(2 * self.header.fontMetrics().lineSpacing() + 6)
        self.header.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.state_label = plain_label()
        self.state_label.setObjectName(f"race_state_{name}")
        self.state_label.setWordWrap(True)
        self.budget_label = QLabel("")
        self.budget_label.setTextFormat(Qt.TextFormat.RichText)
        self.budget_label.setWordWrap(True)
        # One line in both panes, notes or not, so their plots stay level; the whole of long notes in its tooltip.
        self.notes_label = plain_label()
        self.notes_label.setStyleSheet("color: #555; font-style: italic;")
        self.notes_label.setFixedHeight(self.notes_label.fontMetrics().lineSpacing() + 2)
        self.notes_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.transcript = QPlainTextEdit()
        self.transcript.setReadOnly(True)
        self.transcript.setMinimumHeight(60)
        self.interval_plot = IntervalPlot()
        self.visible_plot = VisibleTextPlot()
        self._titles = {plot: plot.getPlotItem().titleLabel.text for plot in (self.interval_plot, self.visible_plot)}
        # Each pane shows one reply: the chat's faded "previous reply" has no place here.
        self.visible_plot.getPlotItem().legend.removeItem("previous reply")
        for plot in (self.interval_plot, self.visible_plot):
            plot.setMinimumHeight(120)
            plot.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(3)
        layout.addWidget(self.header)
        layout.addWidget(self.state_label)
        layout.addWidget(self.budget_label)
        layout.addWidget(self.notes_label)
        layout.addWidget(self.transcript, stretch=1)
        layout.addWidget(self.interval_plot, stretch=3)
        layout.addWidget(self.visible_plot, stretch=3)
        self.streaming = True
        self._texts: list[str] = []
        self._times: list[float] = []
        self._reasoning: set[int] = set()
        self._tail = ""
        self._complete = False
        self._settled = False
        self._shown = 0
        self._chars = 0
        self._median = RunningMedian()
        self.visible_plot.forget_previous()

    # -- setting up ------------------------------------------------------------------------------

    def begin(self, label: str, summary: str, streaming: bool, clock_word: str) -> None:
        """Empty the pane for a run: clock_word ('PLAYBACK', 'LIVE') is put in every plot's title."""
        self.streaming = streaming
        color = SIDE_COLORS[self.name]
        self.header.setText(
            f"<b style='color:{color}; font-size:15px'>{self.name}</b> "
            f"<b>({html.escape(label)})</b> <span style='color:#555'>{html.escape(summary)}</span>"
        )
        self.state_label.setText("waiting for Send")
        self.budget_label.setText("")
        self.show_notes(())
        self.transcript.clear()
        self.interval_plot.reset()
        self.visible_plot.reset()
        self.visible_plot.forget_previous()
        for plot, title in self._titles.items():
            plot.setTitle(f"{clock_word} — {self.name}: {title}")
        self._texts, self._times, self._reasoning = [], [], set()
        self._tail, self._complete, self._settled = "", False, False
        self._shown, self._chars = 0, 0
        self._median = RunningMedian()

    def feed(self, text: str, at_s: float, reasoning: bool = False) -> None:
        if reasoning:
            self._reasoning.add(len(self._texts))
        self._texts.append(text)
        self._times.append(at_s)

    def load(self, track: Track) -> None:
        """A whole recorded reply, for playback: the clock then reveals it at its own token times."""
        for index, (text, at_s) in enumerate(zip(track.texts, track.times_s)):
            self.feed(text, at_s, index in track.reasoning)
        self.complete(track.tail_text)

    def complete(self, tail_text: str = "") -> None:
        """No more tokens will come: a reply that did not stream can now appear, at its last token's time."""
        self._tail = tail_text
        self._complete = True

    # -- the clock -------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._complete and self._shown == len(self._texts)

    @property
    def end_s(self) -> float:
        return self._times[-1] if self._times else 0.0

    def advance(self, now_s: float) -> None:
        due = bisect_right(self._times, now_s)
        for index in range(self._shown, due):
            at = self._times[index]
            if index == 0:
                self.interval_plot.add_ttft(at * 1000)
            else:
                gap_ms = (at - self._times[index - 1]) * 1000
                self.interval_plot.add_interval(index, gap_ms, self._median.add(gap_ms))
            if self.streaming:
                self._show_text(self._text_of(index) + (self._tail if self._is_last(index) else ""), at)
        if not self.streaming and due == len(self._texts) and self._complete and due > self._shown:
            whole = "".join(self._text_of(index) for index in range(due)) + self._tail
            self._show_text(whole, self._times[-1])
        if self._shown == 0 and due == 0:
            self.interval_plot.grow_ttft(now_s * 1000)  # token 0's square grows while the prompt is read
        self._shown = due
        self.visible_plot.advance_clock(now_s)
        self.interval_plot.refresh()
        self.visible_plot.refresh()
        if self.done and not self._settled:
            self._settled = True
            self.interval_plot.settle()
            self.visible_plot.settle()

    def show_state(self, text: str) -> None:
        self.state_label.setText(text)

    def show_notes(self, notes) -> None:
        """What the run said beside its numbers: a warmed cache, a server's own cache, a loop that fell back."""
        self.notes_label.setText("; ".join(notes))
        self.notes_label.setToolTip(plain_tooltip("\n".join(notes)))

    def fit_height(self, characters: float) -> None:
        """The same character scale as the other pane, once both are drawn whole."""
        self.visible_plot.setYRange(0, max(characters, 1.0), padding=0.05)

    @property
    def characters(self) -> int:
        return self._chars

    def show_budget(self, mark) -> None:
        self.budget_label.setText(mark_html(mark))

    def shown_text(self) -> str:
        return self.transcript.toPlainText()

    def step_times_s(self) -> list[float]:
        """When the 'What the user saw' curve stepped up: each moment text was drawn, in seconds since Send."""
        x, y = self.visible_plot.points()
        return [float(x[index]) for index in range(1, len(x)) if y[index] > y[index - 1]]

    def _text_of(self, index: int) -> str:
        return "" if index in self._reasoning else self._texts[index]

    def _is_last(self, index: int) -> bool:
        return self._complete and index == len(self._texts) - 1

    def _show_text(self, text: str, at_s: float) -> None:
        if not text:
            return
        self.transcript.moveCursor(self.transcript.textCursor().MoveOperation.End)
        self.transcript.insertPlainText(text)
        self._chars += len(text)
        self.visible_plot.show_characters(at_s, self._chars)
