"""Keep a plot's data area at least so tall: the widget's least height is the data's plus its title, legend and axes."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt

SIDES = ("left", "bottom")


def hold_data_height(plot: pg.PlotWidget, least_px: int) -> None:
    """A plot given a least height of its own kept 31 of 140 pixels for its points (issue 41): the title, the legend
    and the axis took the rest. The least height is measured with both axes shown, as they are once data comes."""
    item = plot.getPlotItem()
    item.getViewBox().setMinimumHeight(least_px)
    shown = {side: item.getAxis(side).isVisible() for side in SIDES}
    for side in SIDES:
        item.showAxis(side, True)
    least = item.effectiveSizeHint(Qt.SizeHint.MinimumSize).height()
    for side, visible in shown.items():
        item.showAxis(side, visible)
    plot.setMinimumHeight(math.ceil(least) + 2 * plot.frameWidth())


def hold_data_height_again(plot: pg.PlotWidget) -> None:
    """The plot's legend changed (an entry that wrapped it to a second row): its least height measured again, for the
    data height held before, if any; the axis under the data was cut off otherwise."""
    least = plot.getPlotItem().getViewBox().minimumHeight()
    if least > 0:
        hold_data_height(plot, math.ceil(least))
