"""'What the user saw': characters on screen against seconds since Send, beside the previous reply."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gui.meter.first_reply_axes import CHARS_PER_TOKEN, first_axis_tokens
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.live_curve import LiveCurve
from gui.plotting.live_layer import LiveLayer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot
from gui.plotting.stepped_range import SteppedRange

# 250 words a minute at about six characters a word (five letters and a space).
READING_CHARS_PER_S = 250 * 6 / 60


class VisibleTextPlot(PagePlot):
    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="What the user saw",
            bottom="seconds since Send",
            left=("characters on screen", "characters"),
            tooltip="Streaming grows a staircase from the first token on (after TTFT); without streaming the "
            "line stays flat until the whole reply appears at E2E. The faded curve is the previous "
            "reply; the dashed line is a reader at about 250 words a minute, starting when text appears.",
        )
        self.live_layer = LiveLayer(self)
        self.previous_item = LiveCurve(self.live_layer, (150, 150, 150, 110), "previous reply")
        # Its flat stretch from the last change to 'now' is its tail, drawn from the last point at paint time.
        self.current_item = LiveCurve(self.live_layer, "#1a73e8", "this reply")
        self.reading_item = LiveCurve(
            self.live_layer, "#9334e6", "reading at 250 wpm", style=pg.QtCore.Qt.PenStyle.DashLine
        )
        self._x = GrowableBuffer()
        self._y = GrowableBuffer()
        self._first_text_s: float | None = None
        self._now_s = 0.0
        self._drawn_points = -1
        self._previous_max = 0.0
        self._drawn_reading: tuple | None = None
        self._carry_previous = True  # whether reset() keeps the reply just shown as the previous one
        self._settled = False  # whether a reply has ended on this plot (its axes then start the next one)
        # The clock moves every frame; doubling steps keep the axes from re-laying out each time.
        self._x_range = SteppedRange(self.setXRange, floor=1.0)
        self._y_range = SteppedRange(self.setYRange, floor=64)
        # The empty plot's axes as a reply will start them (0-1 s, 0-64 characters), not pyqtgraph's
        # unscaled default around 0, which read "(x0.001)" on both axes.
        self.reset()

    def reset(self, budget_tokens: int | None = None) -> None:
        """Keep the finished reply's curve, faded, for comparison; start a new one. budget_tokens: the reply's max new
        tokens; the window's first reply starts its character axis at what they would write
        (gui/meter/first_reply_axes.py)."""
        # A reply that showed something: its extent, for the axes (and its curve, unless forgotten).
        shown = len(self._x) > 1
        extent_s = extent_chars = 0.0
        if shown:
            extent_s, extent_chars = max(self._now_s, float(self._x.view()[-1])), float(self._y.view().max())
            if self._carry_previous:
                self.previous_item.set_points(self._x.view().copy(), self._y.view().copy())
                self._previous_max = extent_chars
        self._carry_previous = True
        self.current_item.clear()
        self._x.clear()
        self._y.clear()
        self._first_text_s = None
        self._now_s = 0.0
        self._drawn_points = -1
        self._drawn_reading = None
        # The axes start where the previous reply (drawn faded beside this one) ended, so all of it shows, and a
        # reply like it streams without one re-layout of the axes (each cost a few ms of the window's CPU).
        if shown or self._x_range.limit is None:
            self._x_range.reset(extent_s)
            self._y_range.reset(extent_chars)
        self.size_for_budget(budget_tokens)
        self._append(0.0, 0)

    def size_for_budget(self, budget_tokens: int | None) -> None:
        """Until a reply has ended here, the character axis spans what the budget would write
        (gui/meter/first_reply_axes.py)."""
        first_tokens = None if self._settled or len(self._y) > 1 else first_axis_tokens(budget_tokens)
        if first_tokens:
            self._y_range.reset(first_tokens * CHARS_PER_TOKEN)

    def forget_previous(self) -> None:
        """No previous reply (a new chat, a new race): the next reset() keeps no faded curve, only the axes' extent."""
        self.previous_item.clear()
        self._previous_max = 0.0
        self._carry_previous = False

    def show_characters(self, seconds: float, visible_chars: int) -> None:
        """A step: the count stays flat until this moment, then jumps."""
        last = self._y.view()[-1] if len(self._y) else 0
        if visible_chars != last:
            self._append(seconds, last)
            self._append(seconds, visible_chars)
            if self._first_text_s is None and visible_chars > 0:
                self._first_text_s = seconds
        self._now_s = max(self._now_s, seconds)

    def advance_clock(self, seconds: float) -> None:
        self._now_s = max(self._now_s, seconds)

    def refresh(self) -> None:
        x, y = self._x.view(), self._y.view()
        shown = float(y[-1]) if len(y) else 0.0
        time_stepped = self._x_range.set_if_grown(self._now_s)
        x_limit = self._x_range.limit
        assert x_limit is not None  # set_if_grown has set it
        needed = max(shown, self._previous_max)
        if shown and self._now_s > 0 and (time_stepped or needed > (self._y_range.limit or 0.0)):
            # The axes step anyway: the character axis steps to what the reply reaches by the time axis's end at its
            # pace so far (the wait for the first text included, so it errs low), not just past the count. It then
            # steps with the time axis, not on its own a few frames later: each step re-lays out the plot, 7-10 ms of
            # the window's CPU here. A reply within the last one's axes steps neither.
            needed = max(needed, shown * x_limit / self._now_s)
        self._y_range.set_if_grown(needed)
        if len(x) != self._drawn_points:
            self._drawn_points = len(x)
            self.current_item.set_points(x, y)
        self.current_item.tail_to(self._now_s if len(x) and self._now_s > x[-1] else None)
        # The reader's line runs to the edge of the x range, so it changes only when that range steps,
        # not with every frame's clock.
        reading = (self._first_text_s, x_limit)
        if reading != self._drawn_reading:
            self._drawn_reading = reading
            start, end = reading
            if start is None:
                self.reading_item.clear()
            else:
                end = max(end, start + 1.0)
                self.reading_item.set_points(
                    np.array([start, end]), np.array([0.0, (end - start) * READING_CHARS_PER_S])
                )

    def settle(self) -> None:
        """Draw the whole staircase, once the reply has ended, on axes fitted to it (and to the previous reply): while
        it streamed they stepped ahead of it."""
        self.refresh()
        if len(self._x) > 1:
            self._settled = True
            self._x_range.reset(max(self._now_s, float(self._x.view()[-1])))
            self._y_range.reset(max(float(self._y.view().max()), self._previous_max))
            self.refresh()  # the reader's line runs to the fitted end

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """The staircase so far: seconds since Send, and characters on screen."""
        return self._x.view().copy(), self._y.view().copy()

    def _append(self, seconds: float, chars: float) -> None:
        self._x.append(seconds)
        self._y.append(chars)
