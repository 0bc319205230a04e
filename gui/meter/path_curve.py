"""A live curve drawn by Qt's own QGraphicsPathItem, so repainting it runs no Python."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem


class PathCurve:
    """A polyline in a plot's data coordinates.

    pyqtgraph's curve items answer Qt's bounding-rect and paint calls in Python, several times per
    repaint; at 30 repaints a second that was a fifth of the window's CPU, taken from decode on a
    two-core machine. Here Python only builds the path when the data changes. The plot's log mode
    does not apply: callers pass y already transformed.
    """

    def __init__(self, plot: pg.PlotWidget, color, legend_name: str | None = None,
                 style: Qt.PenStyle = Qt.PenStyle.SolidLine):
        pen = QPen(pg.mkColor(color))
        # Width 0 is Qt's one-pixel cosmetic line, its fastest. Wider lines go through the stroker
        # (about 1.6x the repaint), and with any width but 0 QGraphicsPathItem finds its bounding
        # rect by stroking the whole path: about 4 ms a frame at 4,000 points.
        pen.setWidth(0)
        pen.setCosmetic(True)
        pen.setStyle(style)
        self.item = QGraphicsPathItem()
        self.item.setPen(pen)
        plot.addItem(self.item)
        if legend_name and plot.getPlotItem().legend is not None:
            # A sample for the legend only; it is never added to the plot.
            plot.getPlotItem().legend.addItem(pg.PlotDataItem(pen=pen), legend_name)
        self._x = self._y = np.empty(0)

    def set_points(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = x, y
        self.item.setPath(pg.arrayToQPath(x, y, connect="all") if len(x) > 1 else QPainterPath())

    def clear(self) -> None:
        self.set_points(np.empty(0), np.empty(0))

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        """The points last drawn, named as pyqtgraph's items name it."""
        return self._x, self._y
