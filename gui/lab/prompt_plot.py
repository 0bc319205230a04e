"""TTFT and TPOT against prompt tokens: prefill grows with the prompt, decode should not."""

from __future__ import annotations

import pyqtgraph as pg

from core.lab.results import LAB_DEFINITIONS
from gui.plotting.empty_note import RUN_A_SWEEP, EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

TTFT_COLOR = "#e8710a"
TPOT_COLOR = "#188038"


class PromptLengthPlot(PagePlot):
    """Log y, so a TTFT of seconds and a TPOT of milliseconds share one plot and equal ratios look equal."""

    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Prompt length: TTFT grows, TPOT should not",
            bottom="prompt tokens",
            left="ms (log scale)",
            log_y=True,
            tooltip="Claim 1. Each point is the median of the runs at one prompt length.\n"
            f"TTFT: {LAB_DEFINITIONS['ttft_s']}\nTPOT: {LAB_DEFINITIONS['tpot_s']}",
        )
        self.ttft_item = self.plot(
            [],
            [],
            pen=pg.mkPen(TTFT_COLOR, width=2),
            symbol="s",
            symbolSize=8,
            symbolBrush=TTFT_COLOR,
            name="TTFT (prefill)",
        )
        self.tpot_item = self.plot(
            [],
            [],
            pen=pg.mkPen(TPOT_COLOR, width=2),
            symbol="o",
            symbolSize=8,
            symbolBrush=TPOT_COLOR,
            name="TPOT (decode)",
        )
        self.empty_note = EmptyPlotNote(self, RUN_A_SWEEP)
        self._tokens = GrowableBuffer(16)
        self._ttft_ms = GrowableBuffer(16)
        self._tpot_ms = GrowableBuffer(16)

    def reset(self) -> None:
        for buffer in (self._tokens, self._ttft_ms, self._tpot_ms):
            buffer.clear()

    def add_row(self, row: dict) -> None:
        if row.get("ttft_s") is None or row.get("tpot_s") is None:
            return  # a length whose TTFT or TPOT was not measured (null in the row) has no pair of points
        self._tokens.append(row["prompt_tokens"])
        self._ttft_ms.append(row["ttft_s"] * 1000)
        self._tpot_ms.append(row["tpot_s"] * 1000)

    def refresh(self) -> None:
        self.empty_note.show_when(len(self._tokens) == 0)
        self.ttft_item.setData(self._tokens.view(), self._ttft_ms.view())
        self.tpot_item.setData(self._tokens.view(), self._tpot_ms.view())
