"""A plot's left-axis label in the longest of its wordings that the plot's height holds, so none is cut off."""

from __future__ import annotations

import pyqtgraph as pg
from shiboken6 import isValid

# Kept clear of the plot's top and bottom edges, in pixels.
MARGIN_PX = 2


def wordings_of(label: str | tuple[str, ...]) -> tuple[str, ...]:
    """A label's wordings, longest first: given as a tuple, or derived ('ms (log scale)', 'ms (log)', 'ms')."""
    if isinstance(label, tuple):
        return label
    if label.endswith(" (log scale)"):
        stem = label.removesuffix(" (log scale)")
        return label, f"{stem} (log)", stem
    return (label,)


class FittedLabel:
    """pyqtgraph centres the rotated label on the axis and lets it run past the plot's edges: on a short plot (the
    meter's, on a 950-pixel screen) 'interval (log scale)' lost its first letter. Each time the plot is laid out,
    this shows the longest wording that fits, or the shortest one if none does."""

    def __init__(self, plot: pg.PlotWidget, wordings: tuple[str, ...]):
        self._item = plot.getPlotItem()
        self._axis = self._item.getAxis("left")
        self._wordings = wordings
        self.shown = wordings[0]
        self._axis.setLabel(self.shown)
        # Each wording's length, measured once as drawn: setting a label re-renders the axis, so a layout that
        # changes nothing must not try them all again.
        self._lengths: dict[str, float] = {}
        # The axis runs the view's height, so any change of the plot's height or layout moves or resizes it. (The plot
        # item's own signal would also come while a closing plot deletes its axes.)
        self._axis.geometryChanged.connect(self.fit)

    def room(self) -> float:
        """The longest label that fits: twice the distance from the axis's middle to the nearer edge of the plot."""
        axis = self._axis.mapRectToScene(self._axis.rect())
        plot = self._item.mapRectToScene(self._item.rect())
        middle = axis.center().y()
        return 2 * (min(middle - plot.top(), plot.bottom() - middle) - MARGIN_PX)

    def length(self, wording: str) -> float:
        """The wording as drawn, along the axis (the label is rotated a quarter turn)."""
        if wording not in self._lengths:
            self._show(wording)
            self._lengths[wording] = self._axis.label.boundingRect().width()
        return self._lengths[wording]

    def fit(self) -> None:
        if not (isValid(self._axis) and isValid(self._item)) or self._axis.label is None:
            return  # the plot is being deleted, or pyqtgraph's close() has let the label go
        room = self.room()
        fitting = [wording for wording in self._wordings if self.length(wording) <= room]
        self._show(fitting[0] if fitting else self._wordings[-1])

    def _show(self, wording: str) -> None:
        if wording != self.shown:
            self.shown = wording
            self._axis.setLabel(wording)
