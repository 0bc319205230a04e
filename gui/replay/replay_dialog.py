"""A replay of one exported reply: its tokens shown at their own times, or at the TTFT and TPOT the sliders set."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QVBoxLayout,
)

from core.timing.replay import ReplayReply
from core.timing.running_median import RunningMedian
from gui.frame_interval import frame_timer
from gui.meter.interval_plot import IntervalPlot
from gui.meter.visible_text_plot import VisibleTextPlot
from gui.plotting.plot_style import set_plot_title
from gui.untrusted_text import plain_label

if TYPE_CHECKING:
    from gui.race.race_window import RaceWindow


class ReplayDialog(QDialog):
    """Nothing is generated here: the tokens are the file's, the clock is the sliders'."""

    def __init__(self, replies: list[ReplayReply], name: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"REPLAY — {name}")
        self.replies = replies
        banner = plain_label(f"REPLAY of {name}: recorded tokens shown on a chosen clock; nothing is being generated.")
        banner.setObjectName("replay_banner")
        banner.setStyleSheet("background: #fde293; color: #5f3b00; font-weight: 700; padding: 4px;")
        self.reply_box = QComboBox()
        for index, reply in enumerate(replies):
            self.reply_box.addItem(f"reply {index + 1}: {len(reply.texts)} tokens")
        self.ttft_slider = self._slider(
            0,
            20_000,
            "TTFT for this replay (ms): token 0 appears this long after Play. "
            "TTFT = first token's stamp − request start (vLLM).",
        )
        self.tpot_slider = self._slider(
            1,
            1_000,
            "TPOT for this replay (ms): later gaps are scaled so that "
            "(E2E − TTFT) / (N − 1) equals it, keeping the reply's own rhythm.",
        )
        self.ttft_label, self.tpot_label = QLabel(), QLabel()
        self.prompt_label = QLabel()
        self.prompt_label.setToolTip(
            "The recorded reply's prompt, and how much of it came from the prompt cache: "
            "its TTFT followed the prefilled rest."
        )
        self.play_button, self.stop_button = QPushButton("Play"), QPushButton("Stop")
        self.streaming_toggle = QCheckBox("Streaming")
        self.streaming_toggle.setChecked(True)
        self.streaming_toggle.setToolTip("On: text appears token by token, after TTFT. Off: all at once, after E2E.")
        self.text_view = QPlainTextEdit()
        self.text_view.setReadOnly(True)
        self.plot = IntervalPlot()
        self.plot.setMinimumHeight(140)
        self.visible_plot = VisibleTextPlot()
        self.visible_plot.setMinimumHeight(140)
        for plot in (self.plot, self.visible_plot):  # never confused with a measurement
            set_plot_title(plot, "REPLAY — " + plot.getPlotItem().titleLabel.text)
        self.status = plain_label()
        form = QFormLayout()
        form.addRow("Reply", self.reply_box)
        form.addRow("Prompt", self.prompt_label)
        for label, slider, value in (
            ("TTFT", self.ttft_slider, self.ttft_label),
            ("TPOT", self.tpot_slider, self.tpot_label),
        ):
            row = QHBoxLayout()
            row.addWidget(slider, stretch=1)
            row.addWidget(value)
            form.addRow(label, row)
        buttons = QHBoxLayout()
        buttons.addWidget(self.play_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        buttons.addWidget(self.streaming_toggle)
        layout = QVBoxLayout(self)
        layout.addWidget(banner)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.text_view, stretch=1)
        layout.addWidget(self.plot, stretch=1)
        layout.addWidget(self.visible_plot, stretch=1)
        layout.addWidget(self.status)
        self.frame_timer = frame_timer(self, self._on_frame)
        self.reply_box.currentIndexChanged.connect(self._on_reply_chosen)
        self.ttft_slider.valueChanged.connect(self._show_slider_values)
        self.tpot_slider.valueChanged.connect(self._show_slider_values)
        self.play_button.clicked.connect(self.play)
        self.stop_button.clicked.connect(self.stop)
        self._schedule: tuple[float, ...] = ()
        self._shown = 0
        self._started = 0.0
        self._median = RunningMedian()
        self._visible_chars = 0
        self._on_reply_chosen(0)

    @staticmethod
    def _slider(low: int, high: int, tooltip: str) -> QSlider:
        slider = QSlider(Qt.Orientation.Horizontal)
        slider.setRange(low, high)
        slider.setToolTip(tooltip)
        return slider

    @property
    def reply(self) -> ReplayReply:
        return self.replies[self.reply_box.currentIndex()]

    @Slot(int)
    def _on_reply_chosen(self, _index: int) -> None:
        """The sliders start at the recorded reply's own TTFT and TPOT: Play then replays it at real speed."""
        self.stop()
        self._clear_views()  # the last reply's text, plots and figures were left beside this one's settings
        self.status.setText("")
        reply = self.reply
        self.prompt_label.setText(reply.prompt_line)
        self.ttft_slider.setValue(round(reply.ttft_s * 1000))
        self.tpot_slider.setEnabled(reply.tpot_s is not None)
        self.tpot_slider.setValue(round((reply.tpot_s or 0.001) * 1000))
        self._show_slider_values()

    @Slot()
    def _show_slider_values(self) -> None:
        self.ttft_label.setText(f"{self.ttft_slider.value()} ms (recorded {self.reply.ttft_s * 1000:.0f})")
        recorded = self.reply.tpot_s
        self.tpot_label.setText(
            f"{self.tpot_slider.value()} ms (recorded {'—' if recorded is None else f'{recorded * 1000:.1f}'})"
        )

    @Slot()
    def play(self) -> None:
        reply = self.reply
        tpot_s = self.tpot_slider.value() / 1000 if reply.tpot_s is not None else None
        self._clear_views()
        self._schedule = reply.rescheduled(self.ttft_slider.value() / 1000, tpot_s)
        self.status.setText("replaying…")
        self._started = time.perf_counter()
        self.frame_timer.start()

    def _clear_views(self) -> None:
        self._schedule = ()
        self._shown = 0
        self._median = RunningMedian()
        self.text_view.clear()
        self.plot.reset()
        self.visible_plot.reset()
        self._visible_chars = 0

    @Slot()
    def stop(self) -> None:
        self.frame_timer.stop()

    @property
    def playing(self) -> bool:
        return self.frame_timer.isActive()

    def shown_text(self) -> str:
        return self.text_view.toPlainText()

    @Slot()
    def _on_frame(self) -> None:
        elapsed = time.perf_counter() - self._started
        due = self._shown
        while due < len(self._schedule) and self._schedule[due] <= elapsed:
            due += 1
        if due > self._shown:
            for index in range(self._shown, due):
                if index == 0:
                    self.plot.add_ttft(self._schedule[0] * 1000)
                else:
                    gap_ms = (self._schedule[index] - self._schedule[index - 1]) * 1000
                    self.plot.add_interval(index, gap_ms, self._median.add(gap_ms))
            streaming = self.streaming_toggle.isChecked()
            if streaming or due == len(self._schedule):  # without streaming the whole reply shows at E2E
                start = self._shown if streaming else 0
                text = "".join(self.reply.texts[start:due])
                self.text_view.moveCursor(self.text_view.textCursor().MoveOperation.End)
                self.text_view.insertPlainText(text)
                self._visible_chars += len(text)
                self.visible_plot.show_characters(self._schedule[due - 1], self._visible_chars)
            self._shown = due
        elif not self._shown:
            self.plot.grow_ttft(elapsed * 1000)  # the TTFT square grows while 'prefill' is replayed
        self.visible_plot.advance_clock(min(elapsed, self._schedule[-1]) if self._schedule else elapsed)
        self.plot.refresh()
        self.visible_plot.refresh()
        if self._shown == len(self._schedule):
            self.stop()
            self.plot.settle()
            self.status.setText(
                f"replayed {len(self._schedule)} tokens: TTFT {self._schedule[0] * 1000:.0f} ms, "
                f"E2E {self._schedule[-1] * 1000:.0f} ms"
            )

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.stop()
        super().closeEvent(event)


def open_replay(window, path) -> ReplayDialog | RaceWindow | None:
    """Replay an exported JSON trace in its own REPLAY window; a file that is not one is refused, saying why."""
    from pathlib import Path

    from core.bounded_read import NotReadable, read_named_file
    from core.race.document import MAX_RACE_BYTES
    from core.timing.replay import MAX_TRACE_BYTES

    try:
        data = read_named_file(path, max(MAX_TRACE_BYTES, MAX_RACE_BYTES))  # a trace export, or a race file
    except NotReadable as refused:
        window.notify(f"Cannot replay {Path(path).name}: {refused}", is_error=True)
        return None
    return _show_replay(window, data, Path(path).name)


def replay_this_chat(window) -> ReplayDialog | RaceWindow | None:
    """Replay the open chat's replies, as if its traces had been exported and opened."""
    from core.timing.export import traces_to_json

    records = window.saved_chats.records
    data = traces_to_json(
        [record.trace for record in records], per_trace_context=[r.context.to_dict() for r in records]
    )
    return _show_replay(window, data.encode("utf-8"), "this chat")


def _show_replay(window, data: bytes, name: str) -> ReplayDialog | RaceWindow | None:
    from PySide6.QtCore import Qt

    from core.timing.replay import ReplayFileError, read_replay

    if _is_race(data):  # a race file (core/race/document.py) plays back in the race window, both sides together
        from core.race.document import RaceFileError, read_race
        from gui.race.launch import race_window

        try:
            read_race(data)
        except RaceFileError as error:
            window.notify(f"Cannot replay {name}: {error}", is_error=True)
            return None
        race = race_window(window)
        if not race.show_race(data, name):
            window.notify(f"Cannot replay {name} now: {race.status.text()}", is_error=True)
            return None
        race.show()
        race.raise_()
        return race
    try:
        replies = read_replay(data)
    except ReplayFileError as error:
        window.notify(f"Cannot replay {name}: {error}", is_error=True)
        return None
    dialog = ReplayDialog(replies, name, window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog


def _is_race(data: bytes) -> bool:
    import json

    from core.race.document import is_race

    try:
        return is_race(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
