"""The look every plot in the app shares: white background, labelled axes, light grid, a legend row above the data."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

from gui.plotting.fitted_label import FittedLabel, wordings_of
from gui.plotting.legend_row import add_legend_row
from gui.plotting.spaced_axis import SpacedAxis, UncrowdedAxis

# The title's row: pyqtgraph's own is 30 pixels of an 11-point title; with the legend's row below it and the axis under
# the view, a 140-pixel plot kept 31 pixels for its data (issue 41). A 9-point title fits in 20.
TITLE_SIZE, TITLE_ROW_PX = "9pt", 20


def style_plot(
    plot: pg.PlotWidget,
    *,
    title: str,
    bottom: str,
    left: str | tuple[str, ...],
    tooltip: str,
    log_x: bool = False,
    log_y: bool = False,
) -> None:
    """left: the y axis's label, or its wordings longest first; the plot shows the longest that fits its height
    (plot.left_label, a FittedLabel). The left axis is a SpacedAxis: its labels do not overlap on a short plot; nor do
    the bottom axis's (an UncrowdedAxis)."""
    plot.getPlotItem().setAxisItems({"left": SpacedAxis("left"), "bottom": UncrowdedAxis("bottom")})
    plot.setBackground("w")
    set_plot_title(plot, title)
    plot.setLabel("bottom", bottom)
    plot.left_label = FittedLabel(plot, wordings_of(left))
    if log_x or log_y:
        plot.setLogMode(x=log_x, y=log_y)
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.setToolTip(tooltip)
    legend = add_legend_row(plot)
    # A live curve repaints the whole view, and the axes (which draw the grid across it) with it.
    # Replaying their tick text and grid every frame was half the meter's painting; cached as
    # pixmaps they are redrawn only when their range or size changes.
    item = plot.getPlotItem()
    for cached in (item.getAxis("left"), item.getAxis("bottom"), item.titleLabel, legend):
        cached.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


def set_plot_title(plot: pg.PlotWidget, title: str) -> None:
    """The title in the compact row every plot here has (pyqtgraph's setTitle puts its own 30-pixel row back)."""
    item = plot.getPlotItem()
    item.setTitle(title, size=TITLE_SIZE)
    item.titleLabel.setMaximumHeight(TITLE_ROW_PX)
    item.layout.setRowFixedHeight(0, TITLE_ROW_PX)
