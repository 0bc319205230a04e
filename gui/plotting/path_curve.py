"""A live curve drawn by Qt's own QGraphicsPathItems, so repainting it runs no Python."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsPathItem

CROSS_PIXELS = 5
# The newest points are drawn by a second, small item, so a frame that adds a few points repaints
# only the corner where they land, not the whole plot. They join the settled item when there are
# more than this many, or more than an eighth of the settled points (so settling costs O(1) a point).
FRESH_POINTS = 16
FRESH_SHARE = 8
# Up to this many points a path is built point by point: pyqtgraph's arrayToQPath, vectorised for
# thousands, costs about ten times as much for the few points a frame adds.
SMALL_PATH = 64


def _crosses_path(x: np.ndarray, y: np.ndarray, pixel: tuple[float, float]) -> QPainterPath:
    """A small '+' per point, CROSS_PIXELS across, as two one-pixel segments: the cheapest marker
    Qt can draw (a round dot needs a wide pen, which goes through the stroker)."""
    half_x, half_y = pixel[0] * CROSS_PIXELS / 2, pixel[1] * CROSS_PIXELS / 2
    if len(x) <= SMALL_PATH:
        path = QPainterPath()
        for point_x, point_y in zip(np.asarray(x, dtype=float).tolist(), np.asarray(y, dtype=float).tolist()):
            path.moveTo(point_x - half_x, point_y)
            path.lineTo(point_x + half_x, point_y)
            path.moveTo(point_x, point_y - half_y)
            path.lineTo(point_x, point_y + half_y)
        return path
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    xs = np.stack([x - half_x, x + half_x, x, x], axis=1).reshape(-1)
    ys = np.stack([y, y, y - half_y, y + half_y], axis=1).reshape(-1)
    return pg.arrayToQPath(xs, ys, connect="pairs")


def _line_path(x: np.ndarray, y: np.ndarray) -> QPainterPath:
    """The points joined in order (nothing for fewer than two)."""
    if len(x) < 2:
        return QPainterPath()
    if len(x) > SMALL_PATH:
        return pg.arrayToQPath(x, y, connect="all")
    path = QPainterPath()
    path.addPolygon(QPolygonF([QPointF(*point) for point in zip(x.tolist(), y.tolist())]))
    return path


class PathCurve:
    """A polyline (or, with markers=True, a small cross per point) in a plot's data coordinates.

    pyqtgraph's curve items answer Qt's bounding-rect and paint calls in Python, several times per
    repaint; at 30 repaints a second that was about a sixth of the window's CPU, taken from decode on a
    two-core machine. Here Python only builds paths when the data changes, and a growing curve
    rebuilds and repaints only its newest points most frames. The plot's log mode does not apply:
    callers pass y already transformed.
    """

    def __init__(
        self,
        plot: pg.PlotWidget,
        color,
        legend_name: str | None = None,
        style: Qt.PenStyle = Qt.PenStyle.SolidLine,
        markers: bool = False,
    ):
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
        self._settled_item, self._fresh_item = QGraphicsPathItem(), QGraphicsPathItem()
        for item in (self._settled_item, self._fresh_item):
            item.setPen(pen)
            plot.addItem(item)
        if legend_name and plot.getPlotItem().legend is not None:
            # A sample for the legend only; it is never added to the plot.
            plot.getPlotItem().legend.addItem(pg.PlotDataItem(pen=pen), legend_name)
        self._x = self._y = np.empty(0)
        self._pixel: tuple[float, float] | None = None  # data units per pixel, for the crosses; None: to measure
        # Copies of the points the settled item draws, to tell growth from new data.
        self._settled_x = self._settled_y = np.empty(0)

    def set_points(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = x, y
        settled = len(self._settled_x)
        fresh = len(x) - settled
        if fresh < 0 or fresh > max(FRESH_POINTS, settled // FRESH_SHARE) or not self._extends_settled(x, y):
            self._settle(x, y)
            return
        # A line's fresh part starts at the last settled point, so the two items join up.
        start = settled if self._markers else max(settled - 1, 0)
        self._fresh_item.setPath(self._path(x[start:], y[start:]))

    def settle(self) -> None:
        """Hand every point to the settled item: a finished reply leaves nothing in the fresh one."""
        if len(self._x) != len(self._settled_x) or self._fresh_item.path().elementCount():
            self._settle(self._x, self._y)

    def settled_point_count(self) -> int:
        return len(self._settled_x)

    def fresh_point_count(self) -> int:
        return len(self._x) - len(self._settled_x)

    def _extends_settled(self, x: np.ndarray, y: np.ndarray) -> bool:
        settled = len(self._settled_x)
        return bool((x[:settled] == self._settled_x).all() and (y[:settled] == self._settled_y).all())

    def _settle(self, x: np.ndarray, y: np.ndarray) -> None:
        self._settled_x, self._settled_y = np.array(x, dtype=float), np.array(y, dtype=float)
        self._settled_item.setPath(self._path(x, y))
        self._fresh_item.setPath(QPainterPath())

    def _path(self, x: np.ndarray, y: np.ndarray) -> QPainterPath:
        if self._markers:
            return _crosses_path(x, y, self._pixel_size())
        return _line_path(x, y)

    def _pixel_size(self) -> tuple[float, float]:
        """Data units per pixel, from the range just set (the view's transform may not be updated yet)."""
        if self._pixel is None:
            view = self._plot.getViewBox()
            (x_low, x_high), (y_low, y_high) = view.viewRange()
            self._pixel = (x_high - x_low) / max(view.width(), 1.0), (y_high - y_low) / max(view.height(), 1.0)
        return self._pixel

    def _redraw(self, *_) -> None:
        self._pixel = None  # the range or the size changed
        if len(self._x):
            self._settle(self._x, self._y)

    def clear(self) -> None:
        self.set_points(np.empty(0), np.empty(0))

    def getData(self) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802 - pyqtgraph's name
        """The points last drawn, named as pyqtgraph's items name it."""
        return self._x, self._y

    def drawn_elements(self) -> int:
        """Path elements drawn, over both items: a '+' is four, a line has one per point."""
        return self._settled_item.path().elementCount() + self._fresh_item.path().elementCount()
