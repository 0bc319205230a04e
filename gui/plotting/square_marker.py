"""One square marker at a point of a plot, a fixed number of pixels across, drawn by Qt alone."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem


class SquareMarker:
    """A filled square, size pixels across, at one point in the plot's data coordinates (or none).

    pyqtgraph's scatter item answers Qt's bounding-rect and paint calls in Python on every repaint of the
    view, 30 times a second while a reply streams: the single TTFT square cost more of the window's CPU
    than the curves. This is a QGraphicsRectItem that ignores the view's scale, so Qt sizes, clips and
    paints it with no Python. The plot's log mode does not apply: callers pass y already transformed.
    """

    def __init__(self, plot: pg.PlotWidget, color, size: float = 12, legend_name: str | None = None):
        self._item = QGraphicsRectItem(-size / 2, -size / 2, size, size)
        self._item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self._item.setBrush(pg.mkBrush(color))
        self._item.setPen(Qt.PenStyle.NoPen)
        self._item.setVisible(False)
        plot.addItem(self._item)
        if legend_name and plot.getPlotItem().legend is not None:
            # A sample for the legend only; it is never added to the plot. The legend draws a symbol from the
            # item's scatter, which takes its brush only with data: hence the one point.
            sample = pg.PlotDataItem([0], [0], pen=None, symbol="s", symbolSize=size, symbolBrush=color, symbolPen=None)
            plot.getPlotItem().legend.addItem(sample, legend_name)
        self._x = self._y = np.empty(0)

    def setData(self, x, y) -> None:  # noqa: N802 - pyqtgraph's name, as the scatter item it replaces
        """At most one point: the marker moves there, or hides when there is none."""
        self._x, self._y = np.asarray(x, dtype=float)[-1:], np.asarray(y, dtype=float)[-1:]
        if len(self._x):
            self._item.setPos(float(self._x[0]), float(self._y[0]))
        self._item.setVisible(bool(len(self._x)))

    def getData(self) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802 - pyqtgraph's name
        """The point drawn (none, or one), named as pyqtgraph's items name it."""
        return self._x, self._y

    def isVisible(self) -> bool:  # noqa: N802 - Qt's name
        return self._item.isVisible()
