"""Decode tok/s against weight bytes, one point per precision (or per model, from the size sweep), under the
bandwidth-ceiling line."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from core.lab.results import LAB_DEFINITIONS
from gui.plotting.empty_note import RUN_A_SWEEP, EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

MEASURED_COLOR = "#1a73e8"
CEILING_COLOR = "#d93025"
# Labels are created once and reused; more precisions than this are plotted without a name beside them.
LABEL_SLOTS = 8


class PrecisionPlot(PagePlot):
    """Log-log, where bandwidth / bytes is a straight line of slope -1 and 'in proportion' means parallel to it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Weight bytes: decode vs. the bandwidth ceiling",
            bottom="weight MB (log scale)",
            left="decode tok/s (log scale)",
            log_x=True,
            log_y=True,
            tooltip="Claim 2. Each point is one precision's median decode rate.\nRed line: "
            + LAB_DEFINITIONS["ceiling_tok_s"]
            + "\n"
            + LAB_DEFINITIONS["bandwidth_bytes_s"],
        )
        self.ceiling_item = self.plot(
            [], [], pen=pg.mkPen(CEILING_COLOR, width=2, style=Qt.PenStyle.DashLine), name="ceiling: bandwidth / bytes"
        )
        self.measured_item = self.plot(
            [],
            [],
            pen=None,
            symbol="o",
            symbolSize=10,
            symbolBrush=MEASURED_COLOR,
            symbolPen=None,
            name="measured decode tok/s",
        )
        self.labels = []
        for _ in range(LABEL_SLOTS):
            label = pg.TextItem("", color="#333", anchor=(0, 1))
            label.setVisible(False)
            self.addItem(label)
            self.labels.append(label)
        self.empty_note = EmptyPlotNote(self, RUN_A_SWEEP)
        self._megabytes = GrowableBuffer(8)
        self._tok_s = GrowableBuffer(8)
        self._names: list[str] = []
        self._bandwidth_bytes_s: float | None = None

    def reset(self) -> None:
        self._megabytes.clear()
        self._tok_s.clear()
        self._names.clear()
        self._bandwidth_bytes_s = None

    def add_precision_row(self, row: dict) -> None:
        if row.get("error") or not row.get("decode_tok_s") or not row.get("weight_bytes"):
            return
        self._megabytes.append(row["weight_bytes"] / 1e6)
        self._tok_s.append(row["decode_tok_s"])
        self._names.append(row["dtype"])

    def add_size_row(self, row: dict) -> None:
        """A model of the size sweep: its point named by its file."""
        if row.get("error") or not row.get("decode_tok_s") or not row.get("weight_bytes"):
            return
        self._megabytes.append(row["weight_bytes"] / 1e6)
        self._tok_s.append(row["decode_tok_s"])
        self._names.append(row["model"])

    def add_bandwidth_row(self, row: dict) -> None:
        self._bandwidth_bytes_s = row["bandwidth_bytes_s"]
        if not self._names:
            # A bandwidth row without a precision sweep still carries the one model's measured point.
            self.add_precision_row(row)

    def refresh(self) -> None:
        self.empty_note.show_when(len(self._megabytes) == 0)
        megabytes = self._megabytes.view()
        self.measured_item.setData(megabytes, self._tok_s.view())
        for index, label in enumerate(self.labels):
            if index < len(self._names):
                # In log mode the view's coordinates are log10 of the data.
                label.setPos(math.log10(megabytes[index]), math.log10(self._tok_s.view()[index]))
                label.setText(f" {self._names[index]}")
                label.setVisible(True)
            else:
                label.setVisible(False)
        if self._bandwidth_bytes_s is None or not len(megabytes):
            self.ceiling_item.setData([], [])
            return
        span = np.geomspace(megabytes.min() / 1.5, megabytes.max() * 1.5, 32)
        self.ceiling_item.setData(span, self._bandwidth_bytes_s / (span * 1e6))
