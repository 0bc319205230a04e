"""Aggregate and per-user tokens per second against batch size, beside the line batching would follow if free."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from core.lab.results import LAB_DEFINITIONS
from gui.plotting.empty_note import RUN_A_SWEEP, EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

AGGREGATE_COLOR = "#1a73e8"
PER_USER_COLOR = "#188038"
FREE_COLOR = "#888888"


class BatchPlot(PagePlot):
    """Log-log: a free batch would put the aggregate on the grey line, and keep per-user tok/s flat."""

    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Batch size: is batching nearly free?",
            bottom="batch size (log scale)",
            left="tok/s (log scale)",
            log_x=True,
            log_y=True,
            tooltip="Claim 3.\nAggregate: "
            + LAB_DEFINITIONS["aggregate_tok_s"]
            + "\nPer user: "
            + LAB_DEFINITIONS["per_seq_tok_s"]
            + "\nGrey: batch-1 tok/s × batch size, what "
            "the aggregate would be if a bigger batch cost nothing.",
        )
        self.free_item = self.plot(
            [],
            [],
            pen=pg.mkPen(FREE_COLOR, width=1, style=Qt.PenStyle.DashLine),
            name="aggregate if batching were free",
        )
        self.aggregate_item = self.plot(
            [],
            [],
            pen=pg.mkPen(AGGREGATE_COLOR, width=2),
            symbol="o",
            symbolSize=8,
            symbolBrush=AGGREGATE_COLOR,
            name="aggregate tok/s",
        )
        self.per_user_item = self.plot(
            [],
            [],
            pen=pg.mkPen(PER_USER_COLOR, width=2),
            symbol="t",
            symbolSize=8,
            symbolBrush=PER_USER_COLOR,
            name="per-user tok/s",
        )
        self.empty_note = EmptyPlotNote(self, RUN_A_SWEEP)
        self._batch = GrowableBuffer(16)
        self._aggregate = GrowableBuffer(16)
        self._per_user = GrowableBuffer(16)
        self._free = GrowableBuffer(16)
        self._single_tok_s: float | None = None

    def reset(self) -> None:
        for buffer in (self._batch, self._aggregate, self._per_user, self._free):
            buffer.clear()
        self._single_tok_s = None

    def add_row(self, row: dict) -> None:
        if row.get("aggregate_tok_s") is None or row.get("per_seq_tok_s") is None:
            return  # a batch size not measured (null in the row) has no point to draw
        if row["batch_size"] == 1:
            self._single_tok_s = row["aggregate_tok_s"]
        self._batch.append(row["batch_size"])
        self._aggregate.append(row["aggregate_tok_s"])
        self._per_user.append(row["per_seq_tok_s"])

    def refresh(self) -> None:
        self.empty_note.show_when(len(self._batch) == 0)
        batch = self._batch.view()
        self.aggregate_item.setData(batch, self._aggregate.view())
        self.per_user_item.setData(batch, self._per_user.view())
        if self._single_tok_s is None:
            self.free_item.setData([], [])
        else:
            self.free_item.setData(batch, batch * self._single_tok_s)
