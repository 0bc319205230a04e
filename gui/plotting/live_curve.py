"""A live curve, or a cross per point, kept as QPainterPaths that grow by their new points; a LiveLayer paints it."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QPainter, QPainterPath, QPen

from gui.plotting.live_layer import LiveLayer

CROSS_PIXELS = 5
SEGMENT_ENDS = {
    "+": ((-1, 0), (1, 0), (0, -1), (0, 1)),
    "x": ((-1, -1), (1, 1), (-1, 1), (1, -1)),
    "|": ((0, -1), (0, 1)),
}
# Past this many new points a path is built by pyqtgraph's vectorised arrayToQPath; for the few a frame
# adds, point by point is about ten times cheaper.
SMALL_PATH = 64
# Points a piece of the path holds. A frame repaints only the strip its new points fall in, but a single path
# was stroked whole, clipped point by point, at every paint: a reply's last frames cost as much as all its points
# (45 us a curve at 200-1,200 points against 6 below 200, three curves a frame). Only the pieces that reach into
# the repainted strip are drawn: 19-23 us a curve at 200-1,200 points, and no more for a longer reply.
PIECE_POINTS = 128


class LiveCurve:
    """A polyline (or, with markers=True, a small '+' or 'x' per point) in a plot's data coordinates.

    set_points() is handed the whole curve each frame; when it extends the last one, only the new points
    are added to the path and only the strip they lie in is repainted. Anything else (a new reply, a
    cleared plot) rebuilds it. The plot's log mode does not apply: callers pass y already transformed.
    """

    def __init__(
        self,
        layer: LiveLayer,
        color,
        legend_name: str | None = None,
        style: Qt.PenStyle = Qt.PenStyle.SolidLine,
        markers: bool = False,
        shape: str = "+",
        marker_pixels: int = CROSS_PIXELS,
    ):
        pen = QPen(pg.mkColor(color))
        # Width 0 is Qt's one-pixel cosmetic line, its fastest; wider lines go through the stroker.
        pen.setWidth(0)
        pen.setCosmetic(True)
        pen.setStyle(style)
        self._pen = pen
        self._layer = layer
        self._markers = markers
        self._shape, self._marker_pixels = shape, marker_pixels
        self._x = self._y = np.empty(0)
        self._drawn = 0  # points in the path
        self._ends: tuple = ()  # the first and last of them, (x0, y0, x, y)
        # Full pieces, each with its bounds (left, top, right, bottom), and the piece that grows.
        self._pieces: list[tuple[QPainterPath, tuple[float, float, float, float]]] = []
        self._path = QPainterPath()
        self._growing = 0  # points in self._path
        self._rescaled = False  # a cross is sized in pixels: the path is rebuilt when the scale changes
        self._tail_x: float | None = None  # a flat stretch from the last point to here (see tail_to)
        layer.add(self, legend_name, pg.PlotDataItem(pen=pen) if legend_name else None)

    def set_points(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = x, y
        drawn = self._drawn
        # Growth keeps the points drawn so far: the first and the last of them tell growth from new data (a plot
        # clears its curves when a reply starts).
        if len(x) < drawn or (drawn and (x[0], y[0], x[drawn - 1], y[drawn - 1]) != self._ends):
            self._rebuild()
            return
        if len(x) == drawn:
            return
        # A line's new stretch starts at its last drawn point.
        start = drawn if self._markers or not drawn else drawn - 1
        stretch_x, stretch_y = x[start:].tolist(), y[start:].tolist()
        self._append(x[drawn:], y[drawn:])
        self._layer.update_data_rect(min(stretch_x), max(stretch_x), min(stretch_y), max(stretch_y))

    def tail_to(self, x: float | None) -> None:
        """A flat stretch from the last point to x (a count that has not changed since), or none. Drawn at paint time
        from the last point, so a clock that moves every frame rebuilds nothing."""
        if x == self._tail_x:
            return
        if self._drawn:
            last_y = float(self._y[self._drawn - 1])
            ends = [value for value in (self._tail_x, x, float(self._x[self._drawn - 1])) if value is not None]
            self._layer.update_data_rect(min(ends), max(ends), last_y, last_y)
        self._tail_x = x

    def clear(self) -> None:
        self.set_points(np.empty(0), np.empty(0))

    def getData(self) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802 - pyqtgraph's name
        """The points last handed over, named as pyqtgraph's items name it."""
        return self._x, self._y

    def drawn_elements(self) -> int:
        """Path elements: a '+' is four, a line has one per point (a line's piece also starts at the point the one
        before it ended at: not counted twice)."""
        if self._rescaled:
            self._rebuild(repaint=False)
        elements = self._path.elementCount() + sum(path.elementCount() for path, _ in self._pieces)
        return elements if self._markers else elements - len(self._pieces)

    def rescale(self) -> None:
        """The plot's scale changed (its layer repaints all of it): crosses are rebuilt at the next paint."""
        self._rescaled = self._markers

    def paint(self, painter: QPainter, area: tuple[float, float, float, float]) -> None:
        """Onto a painter that maps data coordinates to the layer's pixels; area: the part repainted, (left, top,
        right, bottom) in data coordinates. Full pieces wholly outside it are not drawn."""
        if self._rescaled:
            self._rebuild(repaint=False)
        if self._drawn:
            painter.setPen(self._pen)
            left, top, right, bottom = area
            for path, (piece_left, piece_top, piece_right, piece_bottom) in self._pieces:
                # Compared as numbers: QRectF.intersects is false for a flat stretch's bounds, which have no height.
                if piece_left <= right and piece_right >= left and piece_top <= bottom and piece_bottom >= top:
                    painter.drawPath(path)
            painter.drawPath(self._path)
            if self._tail_x is not None:
                last = self._drawn - 1
                painter.drawLine(QLineF(float(self._x[last]), float(self._y[last]), self._tail_x, float(self._y[last])))

    def _bounds(self) -> QRectF:
        bounds = self._path.boundingRect()
        for path, _ in self._pieces:
            bounds |= path.boundingRect()
        return bounds

    def _rebuild(self, repaint: bool = True) -> None:
        old = self._bounds()
        self._pieces, self._path, self._growing = [], QPainterPath(), 0
        self._drawn = 0
        self._rescaled = False
        self._append(np.asarray(self._x, dtype=float), np.asarray(self._y, dtype=float))
        if repaint:
            # Where the old curve was and where the new one is: a short curve redrawn (the reader's line when the x
            # range steps, a new reply's first points) repaints only its corner.
            bounds = old | self._bounds()
            self._layer.update_data_rect(bounds.left(), bounds.right(), bounds.top(), bounds.bottom())

    def _append(self, x: np.ndarray, y: np.ndarray) -> None:
        if not len(x):
            return
        self._drawn += len(x)
        self._ends = (self._x[0], self._y[0], x[-1], y[-1])
        at = 0
        while at < len(x):
            if self._growing == PIECE_POINTS:
                self._close_piece()
            part = slice(at, at + PIECE_POINTS - self._growing)
            self._grow(x[part], y[part])
            at = part.stop

    def _close_piece(self) -> None:
        bounds = self._path.boundingRect()
        self._pieces.append((self._path, (bounds.left(), bounds.top(), bounds.right(), bounds.bottom())))
        last = self._path.currentPosition()
        self._path, self._growing = QPainterPath(), 0
        if not self._markers:
            self._path.moveTo(last)  # a line goes on from the last piece's end

    def _grow(self, x: np.ndarray, y: np.ndarray) -> None:
        # A line's path is empty only before its first point: each later piece starts where the last one ended.
        starts = not self._growing and not self._pieces
        self._growing += len(x)
        if self._markers:
            self._path.addPath(_crosses_path(x, y, self._layer.pixel_size(), self._shape, self._marker_pixels))
        elif len(x) > SMALL_PATH:
            # connectPath joins the new stretch to the last drawn point with a line, as lineTo does.
            stretch = pg.arrayToQPath(x, y, connect="all")
            if starts:
                self._path.addPath(stretch)
            else:
                self._path.connectPath(stretch)
        else:
            points = zip(x.tolist(), y.tolist())
            if starts:
                self._path.moveTo(*next(points))
            for point in points:
                self._path.lineTo(*point)


def _crosses_path(
    x: np.ndarray, y: np.ndarray, pixel: tuple[float, float], shape: str = "+", size: int = CROSS_PIXELS
) -> QPainterPath:
    """A small '+' (or 'x', or '|') per point, size pixels across, as one-pixel segments: the cheapest marker Qt can
    draw (a round dot needs a wide pen, which goes through the stroker)."""
    half_x, half_y = pixel[0] * size / 2, pixel[1] * size / 2
    # The two segments' ends, as multiples of the half sizes: across and up for '+', the diagonals for 'x'.
    ends = SEGMENT_ENDS[shape]
    if len(x) <= SMALL_PATH:
        path = QPainterPath()
        for point_x, point_y in zip(np.asarray(x, dtype=float).tolist(), np.asarray(y, dtype=float).tolist()):
            for (from_x, from_y), (to_x, to_y) in zip(ends[::2], ends[1::2]):
                path.moveTo(point_x + from_x * half_x, point_y + from_y * half_y)
                path.lineTo(point_x + to_x * half_x, point_y + to_y * half_y)
        return path
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    xs = np.stack([x + end_x * half_x for end_x, _ in ends], axis=1).reshape(-1)
    ys = np.stack([y + end_y * half_y for _, end_y in ends], axis=1).reshape(-1)
    return pg.arrayToQPath(xs, ys, connect="pairs")
