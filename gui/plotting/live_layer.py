"""A widget over a plot's data area that paints its live curves, so a streaming reply never touches the plot's scene."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QRect, Qt, Slot
from PySide6.QtGui import QPainter, QPixmap, QTransform
from PySide6.QtWidgets import QWidget

# Pixels added around a changed stretch of a curve, for a cross's arms and the line's end.
DIRTY_MARGIN = 4


class LiveLayer(QWidget):
    """Paints a picture of the plot's data area (grid and all, taken when the scene changes), then the live items.

    Drawn as items of pyqtgraph's scene, each frame's new points cost the window a scene update, a
    repaint of the whole view with Python answering Qt's bounding-rect calls for every axis and box,
    and the second repaint that scene's queued update brings: about a fifth of the window's CPU while
    a reply streamed. Here a frame repaints only the strip its new points fall in, with no Python but
    this paintEvent. The scene (axes, title, legend) changes only when a range steps or the plot is
    resized, and then the picture is taken again.

    The per-frame arithmetic (a strip's pixels, a paint's area in data units) is done in Python on the transform's
    four numbers, as a ViewBox only scales and shifts: a strip cost three calls into Qt besides its update, and a
    paint six more (with the text's repaints, 125 calls into Qt a frame became 89).
    """

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)  # tooltips and zoom stay the plot's
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self._plot, self._view = plot, plot.getViewBox()
        self._items: list = []  # LiveCurve and LiveSquare, in painting order
        self._backdrop: QPixmap | None = None
        self._transform: QTransform | None = None
        self._scale_shift: tuple[float, float, float, float] = (1.0, 1.0, 0.0, 0.0)  # x and y scale, x and y shift
        self.backdrops_taken = 0
        self._view.sigRangeChanged.connect(self._on_geometry_changed)
        self._view.sigTransformChanged.connect(self._on_geometry_changed)
        self._view.sigResized.connect(self._on_geometry_changed)
        plot.scene().changed.connect(self._on_scene_changed)
        self.raise_()
        self._place()

    def add(self, item, legend_name: str | None = None, legend_sample: pg.PlotDataItem | None = None) -> None:
        """Paint item (after those added before it), and list it in the plot's legend under legend_name, shown by
        legend_sample: an item made only for the legend, never added to the plot."""
        self._items.append(item)
        legend = self._plot.getPlotItem().legend
        if legend_name and legend is not None:
            legend.addItem(legend_sample, legend_name)

    def data_transform(self) -> QTransform:
        """Data coordinates (y already in log10 on a log axis) to this widget's pixels."""
        if self._transform is None:
            view = self._view
            to_widget = view.childTransform() * view.sceneTransform() * self._plot.viewportTransform()
            offset = self._plot.viewport().pos() - self.pos()
            self._transform = to_widget * QTransform.fromTranslate(offset.x(), offset.y())
            transform = self._transform
            # Kept away from zero: a view of no height (before its first layout) has no scale yet.
            self._scale_shift = (
                transform.m11() or 1e-12,
                transform.m22() or 1e-12,
                transform.dx(),
                transform.dy(),
            )
        return self._transform

    def pixel_size(self) -> tuple[float, float]:
        """Data units per pixel along x and y."""
        self.data_transform()
        x_scale, y_scale, _, _ = self._scale_shift
        return 1.0 / abs(x_scale), 1.0 / abs(y_scale)

    def update_data_rect(
        self, x_low: float, x_high: float, y_low: float, y_high: float, margin: int = DIRTY_MARGIN
    ) -> None:
        """Repaint only where a stretch of data lies (its points, in data coordinates), margin pixels around it."""
        self.data_transform()
        x_scale, y_scale, x_shift, y_shift = self._scale_shift
        x_from, x_to = sorted((x_low * x_scale + x_shift, x_high * x_scale + x_shift))
        y_from, y_to = sorted((y_low * y_scale + y_shift, y_high * y_scale + y_shift))
        # Out to whole pixels, as QRectF.toAlignedRect, then margin more each side.
        left, top = math.floor(x_from) - margin, math.floor(y_from) - margin
        self.update(left, top, math.ceil(x_to) + margin - left, math.ceil(y_to) + margin - top)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self._backdrop is None:
            self._backdrop = self._plot.viewport().grab(self.geometry().translated(-self._plot.viewport().pos()))
            self.backdrops_taken += 1
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._backdrop)
        painter.setTransform(self.data_transform())  # every item draws in data coordinates
        # The repainted part in data coordinates, a pixel wider each side: an item may leave out what lies beyond it.
        left, top, width, height = event.rect().getRect()
        x_scale, y_scale, x_shift, y_shift = self._scale_shift
        x_from, x_to = sorted(((left - 1 - x_shift) / x_scale, (left + width + 1 - x_shift) / x_scale))
        y_from, y_to = sorted(((top - 1 - y_shift) / y_scale, (top + height + 1 - y_shift) / y_scale))
        area = (x_from, y_from, x_to, y_to)
        for item in self._items:
            item.paint(painter, area)
        painter.end()

    def _place(self) -> None:
        viewport = self._plot.viewport()
        area = self._plot.mapFromScene(self._view.sceneBoundingRect()).boundingRect()
        self.setGeometry(QRect(area.topLeft() + viewport.pos(), area.size()))

    @Slot()
    def _on_geometry_changed(self, *_) -> None:
        self._transform = None
        self._backdrop = None
        self._place()
        for item in self._items:
            item.rescale()
        self.update()

    @Slot(list)
    def _on_scene_changed(self, regions: list) -> None:
        """Something under the data area changed (the grid with its axes, a note): take the picture again."""
        area = self._view.sceneBoundingRect()
        if any(area.intersects(region) for region in regions):
            self._backdrop = None
            self.update()
