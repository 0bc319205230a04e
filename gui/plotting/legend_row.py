"""A plot's legend as one row between the title and the data, where it can hide no point."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSizePolicy

# Enough columns for every plot's entries to sit side by side in one row.
LEGEND_COLUMNS = 4
# The cell of the PlotItem's grid that the top axis holds: between the title (row 0) and the view
# (row 2). No plot here shows a top axis, so it gives the cell up (a grid cell takes one item).
LEGEND_CELL = (1, 1)


class LegendRow(pg.LegendItem):
    """pyqtgraph's legend, laid out by the plot instead of floating over the view.

    Floating at the upper right with a translucent white box, the legend covered the points of a
    reply at about 50 ms a token from token 76 on and drew them pale (issue #14).
    """

    def __init__(self):
        # No offset: the grid places it, not pyqtgraph's anchoring. No frame: it overlaps nothing.
        super().__init__(offset=None, colCount=LEGEND_COLUMNS, frame=False, horSpacing=12)
        # As wide as its entries, not the plot: the entries then sit together rather than spread out.
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)

    def mouseDragEvent(self, ev):
        # Dragging would re-anchor it over the data, and the layout would snap it back at once.
        ev.ignore()


def add_legend_row(plot: pg.PlotWidget) -> LegendRow:
    """Give the plot a LegendRow; items created with a name (or PathCurve's legend_name) join it."""
    item = plot.getPlotItem()
    legend = LegendRow()
    item.layout.removeItem(item.getAxis("top"))
    item.layout.addItem(legend, *LEGEND_CELL)
    item.layout.setAlignment(legend, Qt.AlignmentFlag.AlignHCenter)
    # PlotItem.addItem adds named items to whatever legend it holds here.
    item.legend = legend
    return legend
