"""A y axis whose tick labels never overlap: on a short plot it labels fewer values instead of running them together."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetricsF

# Air between two tick labels, in pixels.
LABEL_AIR_PX = 2


def wider_spacing(spacing: float) -> float:
    """The next round spacing up: 1, 2, 5, 10, 20, 50 ... times a power of ten."""
    power = 10.0 ** math.floor(math.log10(spacing) + 1e-9)
    mantissa = round(spacing / power, 6)
    return power * (2 if mantissa < 2 else 5 if mantissa < 5 else 10)


def inside(values, low: float, high: float, margin: float) -> list[float]:
    """The values whose label (margin either side) lies within low..high: pyqtgraph hides a label that sticks out."""
    return [value for value in values if low + margin <= value <= high - margin]


def label_spacing(low: float, high: float, size_px: float, spacing: float, label_px: float) -> tuple[float, float]:
    """(spacing, offset) of the labelled ticks on an axis from low to high, size_px long, for labels label_px tall.

    From `spacing` (pyqtgraph's choice) up in round steps, the first at which the labels inside the axis are at
    least a label and some air apart. Where only one fits, one round value inside it: a spacing longer than the
    axis, offset to that value (pyqtgraph puts ticks at offset + k x spacing).
    """
    per_px = (high - low) / size_px
    margin, gap = label_px / 2 * per_px, (label_px + LABEL_AIR_PX) * per_px
    single: float | None = None
    while spacing < 10 * (high - low):
        first = math.ceil((low + margin) / spacing) * spacing
        shown = inside((first + step * spacing for step in range(int((high - low) / spacing) + 2)), low, high, margin)
        if len(shown) >= 2 and spacing >= gap:
            return spacing, 0.0
        if len(shown) == 1:
            single = shown[0]  # the roundest one yet: the wider the spacing, the rounder its multiples
        elif single is not None:
            break
        spacing = wider_spacing(spacing)
    if single is None:
        return spacing, 0.0  # no label fits at all: pyqtgraph hides them
    return 10 * (high - low), single


def labelled_subset(ticks: list[tuple[float, str]], low: float, high: float, size_px: float, label_px: float):
    """Every n-th of these (value, label) ticks, n as small as keeps labels apart; of the n ways to start, the one
    that leaves the most labels inside the axis."""
    if len(ticks) < 2 or high <= low or size_px <= 0:
        return list(ticks)
    per_px = (high - low) / size_px
    step_px = abs(ticks[1][0] - ticks[0][0]) / per_px
    every = max(1, math.ceil((label_px + LABEL_AIR_PX) / step_px)) if step_px > 0 else 1
    margin = label_px / 2 * per_px
    choices = [ticks[start::every] for start in range(every)]
    return max(choices, key=lambda chosen: len(inside((value for value, _ in chosen), low, high, margin)))


class UncrowdedAxis(pg.AxisItem):
    """An axis that leaves out a tick label that would overlap one placed before it (pyqtgraph places the coarser
    levels first, and decades before the values between them). A log axis spanning less than two decades labels every
    value in between, and on the Lab's plots, a few hundred pixels wide, "7·10¹", "8·10¹", "9·10¹" and "10²" ran
    together."""

    def resizeEvent(self, ev=None):  # noqa: N802 - pyqtgraph's name
        super().resizeEvent(ev)
        # The label's foot on the axis's foot: pyqtgraph sets it 5 pixels below, and under Xvfb "seconds since Send"
        # was cut through its middle at the foot of the meter. The height pyqtgraph keeps for it (0.8 of its box)
        # holds its text: the box's top is a margin.
        if self.orientation == "bottom" and self.label is not None:
            self.label.setY(int(self.size().height() - self.label.boundingRect().height()))

    def generateDrawSpecs(self, p):  # noqa: N802 - pyqtgraph's name
        specs = super().generateDrawSpecs(p)
        if specs is None:  # no view linked yet
            return specs
        axis, ticks, texts = specs
        air = LABEL_AIR_PX
        kept: list = []
        for rect, flags, text in sorted(texts, key=lambda spec: _label_rank(spec[2])):
            padded = rect.adjusted(-air, -air, air, air)
            if not any(padded.intersects(other) for other, _, _ in kept):
                kept.append((rect, flags, text))
        return axis, ticks, kept


def _label_rank(text: str) -> int:
    """Which labels an UncrowdedAxis places first: on a log axis a decade ("10²"), then a 2 or a 5 ("5·10¹"), then
    the rest; a linear axis's labels all rank alike, so they keep pyqtgraph's order (coarser levels first)."""
    if "·" not in text:
        return 0
    return 1 if text.split("·")[0] in ("2", "5") else 2


class SpacedAxis(UncrowdedAxis):
    """pyqtgraph's axis keeps at least two intervals of major ticks and always labels them, so on the meter's least
    plot height the labels ran together ("800", "600", "400" and "200" within 25 px). This one labels round values
    far enough apart (label_spacing), and drops finer levels that would crowd them. Ticks given as a list
    (set_labelled_ticks, such as the interval plot's decades) are thinned the same way (labelled_subset)."""

    def __init__(self, orientation: str = "left", **kwargs):
        super().__init__(orientation, **kwargs)
        self._labelled: list[tuple[float, str]] | None = None
        self.whole_numbers = False  # a count's axis (requests): no tick between two whole values

    def label_px(self) -> float:
        """A tick label's height as pyqtgraph measures it (its text rect, at 0.8 of the font's line height)."""
        return QFontMetricsF(self.style.get("tickFont") or QFont()).height() * 0.8

    def tickSpacing(self, minVal: float, maxVal: float, size: float):  # noqa: N802, N803 - pyqtgraph's names
        levels = super().tickSpacing(minVal, maxVal, size)
        if not levels or maxVal <= minVal or size <= 0:
            return levels
        # On a log axis a value is a power of ten: whole decades only, or a label would read 31.6. A count's axis
        # is whole too: one request's timeline read 0.7, 0.8, ... 1.3 down its side.
        whole = self.logMode or self.whole_numbers
        start = max(levels[0][0], 1.0) if whole else levels[0][0]
        label_px = self.label_px()
        spacing, offset = label_spacing(minVal, maxVal, size, start, label_px)
        gap = (label_px + LABEL_AIR_PX) * (maxVal - minVal) / size
        finer = [
            level
            for level in levels[1:]
            if gap <= level[0] < spacing and offset == 0.0 and (level[0] >= 1.0 or not whole)
        ]
        return [(spacing, offset), *finer]

    def set_labelled_ticks(self, ticks: list[tuple[float, str]]) -> None:
        """Label these values (and no others), as many of them as the axis has room for."""
        self._labelled = list(ticks)
        self._apply_labelled()

    def resizeEvent(self, ev=None) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(ev)
        self._apply_labelled()

    def setRange(self, mn: float, mx: float) -> None:  # noqa: N802 - pyqtgraph's name
        """A new range (a zoom, a step) spaces the listed ticks differently."""
        super().setRange(mn, mx)
        self._apply_labelled()

    def _apply_labelled(self) -> None:
        """Space the listed ticks for the axis's length and range now (none listed: pyqtgraph's own)."""
        labelled = getattr(self, "_labelled", None)
        if labelled is None:  # none listed, or pyqtgraph's constructor, before ours has run
            return
        low, high = sorted(self.range)
        length = self.size().height() if self.orientation in ("left", "right") else self.size().width()
        shown = labelled_subset(labelled, low, high, length, self.label_px())
        if self._tickLevels != [shown, []]:
            self.setTicks([shown, []])
