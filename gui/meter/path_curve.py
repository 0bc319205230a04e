"""A live curve drawn by Qt's own QGraphicsPathItem, so repainting it runs no Python."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsPathItem


CROSS_PIXELS = 5


def _crosses_path(x: np.ndarray, y: np.ndarray, pixel: tuple[float, float]) -> QPainterPath:
    """A small '+' per point, CROSS_PIXELS across, as two one-pixel segments: the cheapest marker
    Qt can draw (a round dot needs a wide pen, which goes through the stroker)."""
    if not len(x):
        return QPainterPath()
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    half_x, half_y = pixel[0] * CROSS_PIXELS / 2, pixel[1] * CROSS_PIXELS / 2
    xs = np.stack([x - half_x, x + half_x, x, x], axis=1).reshape(-1)
    ys = np.stack([y, y, y - half_y, y + half_y], axis=1).reshape(-1)
    return pg.arrayToQPath(xs, ys, connect="pairs")


class PathCurve:
    """A polyline (or, with markers=True, a small cross per point) in a plot's data coordinates.

    pyqtgraph's curve items answer Qt's bounding-rect and paint calls in Python, several times per
    repaint; at 30 repaints a second that was about a sixth of the window's CPU, taken from decode on a
    two-core machine. Here Python only builds the path when the data changes. The plot's log mode
    does not apply: callers pass y already transformed.
    """

    def __init__(self, plot: pg.PlotWidget, color, legend_name: str | None = None,
                 style: Qt.PenStyle = Qt.PenStyle.SolidLine, markers: bool = False):
        pen = QPen(pg.mkColor(color))
        # Width 0 is Qt's one-pixel cosmetic line, its fastest. Wider lines go through the stroker
        # (about 1.6x the repaint), and with any width but 0 QGraphicsPathItem finds its bounding
        # rect by stroking the whole path: about 4 ms a frame at 4,000 points.
        pen.setWidth(0)
        pen.setCosmetic(True)
        pen.setStyle(style)
        self._plot = plot
        self._markers = markers
        if markers:
            # A cross is sized in pixels, so it is rebuilt when the axes' scale changes.
            plot.getViewBox().sigResized.connect(self._redraw)
            plot.getViewBox().sigRangeChanged.connect(self._redraw)
        self.item = QGraphicsPathItem()
        self.item.setPen(pen)
        plot.addItem(self.item)
        if legend_name and plot.getPlotItem().legend is not None:
            # A sample for the legend only; it is never added to the plot.
            plot.getPlotItem().legend.addItem(pg.PlotDataItem(pen=pen), legend_name)
        self._x = self._y = np.empty(0)

    def set_points(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = x, y
        if self._markers:
            self.item.setPath(_crosses_path(x, y, self._pixel_size()))
        else:
            self.item.setPath(pg.arrayToQPath(x, y, connect="all") if len(x) > 1 else QPainterPath())

    def _pixel_size(self) -> tuple[float, float]:
        """Data units per pixel, from the range just set (the view's transform may not be updated yet)."""
        view = self._plot.getViewBox()
        (x_low, x_high), (y_low, y_high) = view.viewRange()
        return (x_high - x_low) / max(view.width(), 1.0), (y_high - y_low) / max(view.height(), 1.0)

    def _redraw(self, *_) -> None:
        if len(self._x):
            self.set_points(self._x, self._y)

    def clear(self) -> None:
        self.set_points(np.empty(0), np.empty(0))

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        """The points last drawn, named as pyqtgraph's items name it."""
        return self._x, self._y
