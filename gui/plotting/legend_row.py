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
        super().__init__(offset=None, colCount=LEGEND_COLUMNS, frame=False, horSpacing=10, labelTextSize="8pt")
        # As wide as its entries, not the plot: the entries then sit together rather than spread out.
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        # Its entries' width must not hold the plot wider than its widget (the right end was cut
        # off); fit_columns wraps them into rows instead.
        self.setMinimumWidth(0)
        # No margin around the entries: the style's nine pixels above and below doubled the row's height.
        self.layout.setContentsMargins(0, 0, 0, 0)

    def fit_columns(self, width: float) -> None:
        """As many columns as fit in width (at least one): a narrow plot gets its legend in two rows
        instead of one cut off at the right."""
        # Two cells an entry (sample, label), each followed by the layout's spacing.
        entries = [
            sample.boundingRect().width() + label.boundingRect().width() + 2 * self.layout.horizontalSpacing()
            for sample, label in self.items
        ]
        columns = max(1, min(LEGEND_COLUMNS, len(entries)))
        while columns > 1 and _row_width(entries, columns) > width:
            columns -= 1
        self.setColumnCount(columns)

    def mouseDragEvent(self, ev):  # noqa: N802 - pyqtgraph's name
        # Dragging would re-anchor it over the data, and the layout would snap it back at once.
        ev.ignore()


def _row_width(entries: list[float], columns: int) -> float:
    """Entries fill the rows left to right; each column is as wide as its widest entry."""
    return sum(max(entries[column::columns]) for column in range(columns))


def add_legend_row(plot: pg.PlotWidget) -> LegendRow:
    """Give the plot a LegendRow; items created with a name (or a LiveCurve's legend_name) join it."""
    item = plot.getPlotItem()
    legend = LegendRow()
    item.layout.removeItem(item.getAxis("top"))
    item.layout.addItem(legend, *LEGEND_CELL)
    item.layout.setAlignment(legend, Qt.AlignmentFlag.AlignHCenter)
    # PlotItem.addItem adds named items to whatever legend it holds here.
    item.legend = legend
    # The view has the legend's column, so its width is the room the legend has.
    view = item.getViewBox()
    view.sigResized.connect(lambda: legend.fit_columns(view.width()))
    return legend
