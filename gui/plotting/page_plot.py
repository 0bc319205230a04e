"""A plot on a page that scrolls: the wheel scrolls the page, Ctrl+wheel zooms the plot (as a map on a web page)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QWheelEvent


class PagePlot(pg.PlotWidget):
    """The Lab's plots, the meter's and the Traffic timeline. The wheel over a Lab plot zoomed it (to axes of 10⁻¹⁷
    and labels on top of each other) instead of scrolling the Lab, whose plots fill most of the page: a user scrolling
    down landed in one and could not get out. The meter scrolls too on a short screen, and its live plots keep a
    zoom the frames do not undo."""

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            super().wheelEvent(event)
        else:
            event.ignore()  # to the scroll area around the page
