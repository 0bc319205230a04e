"""One square marker at a point of a plot, a fixed number of pixels across, painted by the plot's LiveLayer."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPainter

from gui.plotting.live_layer import LiveLayer


class LiveSquare:
    """A filled square, size pixels across, at one point in the plot's data coordinates (or none).

    It moves every frame while a prompt is read (the TTFT so far), so it is painted by the layer, not kept
    in the plot's scene, where each move cost a scene update and a repaint of the whole view. The plot's log
    mode does not apply: callers pass y already transformed.
    """

    def __init__(self, layer: LiveLayer, color, size: float = 12, legend_name: str | None = None):
        self._layer, self._size, self._brush = layer, size, pg.mkBrush(color)
        self._x = self._y = np.empty(0)
        # The legend draws a symbol from its sample's scatter, which takes its brush only with data: hence one point.
        sample = (
            pg.PlotDataItem([0], [0], pen=None, symbol="s", symbolSize=size, symbolBrush=color, symbolPen=None)
            if legend_name
            else None
        )
        layer.add(self, legend_name, sample)

    def setData(self, x, y) -> None:  # noqa: N802 - pyqtgraph's name, as the scatter item it replaced
        """At most one point: the marker moves there, or hides when there is none."""
        self._repaint()
        self._x, self._y = np.asarray(x, dtype=float)[-1:], np.asarray(y, dtype=float)[-1:]
        self._repaint()

    def getData(self) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802 - pyqtgraph's name
        """The point drawn (none, or one), named as pyqtgraph's items name it."""
        return self._x, self._y

    def isVisible(self) -> bool:  # noqa: N802 - Qt's name
        return bool(len(self._x))

    def rescale(self) -> None:
        """Sized in pixels, it needs nothing when the scale changes."""

    def paint(self, painter: QPainter, _area: tuple[float, float, float, float]) -> None:
        """Onto a painter that maps data coordinates to the layer's pixels: the square's size is turned into data
        units, so the painter keeps its transform for the curves. One square: drawn whatever part is repainted."""
        if not len(self._x):
            return
        width, height = self._layer.pixel_size()
        width, height = width * self._size, height * self._size
        painter.fillRect(QRectF(self._x[0] - width / 2, self._y[0] - height / 2, width, height), self._brush)

    def _repaint(self) -> None:
        if len(self._x):
            x, y = float(self._x[0]), float(self._y[0])
            self._layer.update_data_rect(x, x, y, y, margin=int(self._size))
