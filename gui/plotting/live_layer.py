"""A widget over a plot's data area that paints its live curves, so a streaming reply never touches the plot's scene."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRect, QRectF, Qt, Slot
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
    """

    def __init__(self, plot: pg.PlotWidget):
        super().__init__(plot)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)  # tooltips and zoom stay the plot's
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self._plot, self._view = plot, plot.getViewBox()
        self._items: list = []  # LiveCurve and LiveSquare, in painting order
        self._backdrop: QPixmap | None = None
        self._transform: QTransform | None = None
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
        return self._transform

    def pixel_size(self) -> tuple[float, float]:
        """Data units per pixel along x and y."""
        transform = self.data_transform()
        return 1.0 / max(abs(transform.m11()), 1e-12), 1.0 / max(abs(transform.m22()), 1e-12)

    def update_data_rect(
        self, x_low: float, x_high: float, y_low: float, y_high: float, margin: int = DIRTY_MARGIN
    ) -> None:
        """Repaint only where a stretch of data lies (its points, in data coordinates), margin pixels around it."""
        rect = self.data_transform().mapRect(QRectF(x_low, y_low, x_high - x_low, y_high - y_low)).toAlignedRect()
        self.update(rect.adjusted(-margin, -margin, margin, margin))

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self._backdrop is None:
            self._backdrop = self._plot.viewport().grab(self.geometry().translated(-self._plot.viewport().pos()))
            self.backdrops_taken += 1
        painter = QPainter(self)
        painter.drawPixmap(0, 0, self._backdrop)
        painter.setTransform(self.data_transform())  # every item draws in data coordinates
        for item in self._items:
            item.paint(painter)
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
