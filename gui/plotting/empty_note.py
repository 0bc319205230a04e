"""A centred note in a plot with no data yet, shown in place of axes that have nothing to measure."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsSimpleTextItem

NOTE_COLOR = "#666666"
# What the Lab tab's plots say before a sweep has run or a result has been loaded.
# Two lines: it fits the Lab's four plots side by side in pairs.
RUN_A_SWEEP = "Press Run to measure (or Load JSON…);\nthe points appear here."


class EmptyPlotNote:
    """Until show_when(False), the plot shows this note and no axes (pyqtgraph's default 0-1 axes,
    with crowded labels on a log axis, only said that nothing had been measured)."""

    def __init__(self, plot: pg.PlotWidget, text: str):
        self._plot = plot
        self._view = plot.getViewBox()
        # A child of the ViewBox itself, not of its data group, so it stays centred whatever the range.
        self.item = QGraphicsSimpleTextItem(text, self._view)
        self.item.setBrush(QColor(NOTE_COLOR))
        self._view.sigResized.connect(self._centre)
        self._empty: bool | None = None
        self.show_when(True)

    @property
    def shown(self) -> bool:
        return bool(self._empty)

    def show_when(self, empty: bool) -> None:
        if empty == self._empty:
            return
        self._empty = empty
        self.item.setVisible(empty)
        item = self._plot.getPlotItem()
        for side in ("left", "bottom"):
            item.showAxis(side, not empty)
        self._centre()

    def _centre(self, *_) -> None:
        view, text = self._view.boundingRect(), self.item.boundingRect()
        self.item.setPos(view.center().x() - text.width() / 2, view.center().y() - text.height() / 2)
