"""The history sweep: TTFT turn by turn, with the prompt cache and without it."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from core.lab.results import LAB_DEFINITIONS
from gui.plotting.empty_note import RUN_A_SWEEP, EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

ON_COLOR = "#188038"
OFF_COLOR = "#e8710a"


class HistorySweepPlot(PagePlot):
    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="A chat: TTFT per turn, cache on and off",
            bottom="turn",
            left="TTFT ms",
            tooltip="With the prompt cache each turn prefills only its new tokens, so TTFT stays nearly flat; "
            "without it the whole chat is prefilled every turn, and TTFT grows with the history.\n"
            + LAB_DEFINITIONS["history"],
        )
        self.on_item = self.plot(
            [],
            [],
            pen=pg.mkPen(ON_COLOR, width=2),
            symbol="o",
            symbolSize=8,
            symbolBrush=ON_COLOR,
            name="prompt cache on",
        )
        self.off_item = self.plot(
            [],
            [],
            pen=pg.mkPen(OFF_COLOR, width=2, style=Qt.PenStyle.DashLine),
            symbol="s",
            symbolSize=8,
            symbolBrush=OFF_COLOR,
            name="prompt cache off",
        )
        self.empty_note = EmptyPlotNote(self, RUN_A_SWEEP)
        self._turns = GrowableBuffer(16)
        self._on_ms = GrowableBuffer(16)
        self._off_ms = GrowableBuffer(16)

    def reset(self) -> None:
        for buffer in (self._turns, self._on_ms, self._off_ms):
            buffer.clear()

    def add_row(self, row: dict) -> None:
        if row.get("ttft_on_s") is None or row.get("ttft_off_s") is None:
            return  # a turn not measured both ways (null in the row) has no pair of points to draw
        self._turns.append(row["turn"])
        self._on_ms.append(row["ttft_on_s"] * 1000)
        self._off_ms.append(row["ttft_off_s"] * 1000)

    def refresh(self) -> None:
        self.empty_note.show_when(len(self._turns) == 0)
        self.on_item.setData(self._turns.view(), self._on_ms.view())
        self.off_item.setData(self._turns.view(), self._off_ms.view())
        if len(self._turns):
            self.setYRange(0, float(max(self._on_ms.view().max(), self._off_ms.view().max())), padding=0.08)
