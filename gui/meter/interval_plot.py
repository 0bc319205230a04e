"""Per-token intervals of the current reply: TTFT as its own marker, then every gap, with the running median; accepted
draft tokens (speculative decoding) in a colour of their own."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from core.timing.metrics import DEFINITIONS
from gui.meter.first_reply_axes import first_axis_tokens
from gui.plotting.data_height import hold_data_height_again
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.live_curve import LiveCurve
from gui.plotting.live_layer import LiveLayer
from gui.plotting.live_square import LiveSquare
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot
from gui.plotting.stepped_range import SteppedRange

TTFT_COLOR = "#e8710a"
INTERVAL_COLOR = "#1a73e8"
MEDIAN_COLOR = "#0b6b2b"
# Accepted drafts: the transcript tints the same tokens in a pale shade of it (gui/chat/draft_tint.py).
DRAFT_COLOR = "#9334e6"
DRAFT_LEGEND = "accepted draft"
PASS_COLOR = "#c5221f"  # a verify pass that rejected drafts: its label says how many
# Labels of the passes that rejected drafts: a pool made once; past it, only the ticks mark them.
PASS_LABELS = 48
SYMBOL_LIMIT = 300
# Gaps are drawn on a log axis; a gap of 0 (two tokens from one put()) is shown at this floor.
FLOOR_MS = 1e-3
# The decades (log10 of ms) shown before any data: 1 ms to 1 s holds a CPU's or a server's TPOT and a short prompt's
# TTFT, so a window's first reply seldom widens them while it streams (each widening repaints the whole plot).
EMPTY_DECADES = (0, 3)


def decade_label(power: int) -> str:
    """10**power milliseconds, as a person would say it: '1 µs', '10 ms', '1 s', '100 s'."""
    if power >= 3:
        return f"{10 ** (power - 3):g} s"
    if power >= 0:
        return f"{10**power:g} ms"
    return f"{10 ** (power + 3):g} µs"


class IntervalPlot(PagePlot):
    """x: token index; y: ms since the previous token (log scale, so a long TTFT and short gaps both show)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Per-token intervals (prefill, then decode)",
            bottom="token index",
            left="interval (log scale)",
            log_y=True,
            tooltip="Token 0's bar is the TTFT ("
            + DEFINITIONS["ttft_s"]
            + ") Every later point is an ITL: "
            + DEFINITIONS["itl_s"]
            + " The green line is the running median of the gaps (the median ITL so far); the TPOT card is their mean, so a few "
            "long gaps lift the card above the line. "
            "With speculative decoding, each purple x is an accepted draft token, which cost no decode step of its "
            "own: the model checked a step's drafts in one pass, and the drafts it kept come out together. The pass's "
            "time shows on the first token it gave (a burst's first draft, high), the rest of the burst, and the "
            "model's own token that ends it, microseconds later (at the bottom). Once the reply ends, a purple tick "
            "marks each verify pass on the token its time landed on, and a red -r the passes that rejected r drafts. "
            "From a server, each point is a gap between chunks, not tokens: " + DEFINITIONS["chunks"],
        )
        # Each item is created once; refresh() only hands them new arrays. The layer paints them in this order.
        self.live_layer = LiveLayer(self)
        self.ttft_item = LiveSquare(self.live_layer, TTFT_COLOR, 12, "TTFT (prefill)")
        self.interval_item = LiveCurve(self.live_layer, INTERVAL_COLOR, "inter-token gap (decode)")
        # A cross per gap: the cheapest marker Qt draws (a scatter item runs Python on every repaint).
        self.marker_item = LiveCurve(self.live_layer, INTERVAL_COLOR, markers=True)
        self.median_item = LiveCurve(self.live_layer, MEDIAN_COLOR, "running median gap")
        # Painted last: a burst's crosses over the line that drops to them.
        # An 'x', larger: told apart from the blue '+' by its shape too.
        self.draft_item = LiveCurve(self.live_layer, DRAFT_COLOR, markers=True, shape="x", marker_pixels=7)
        # In the legend only while the plot holds a draft: a reply without speculation keeps its one-row legend.
        self._draft_sample = pg.PlotDataItem(
            [0], [0], pen=None, symbol="x", symbolSize=9, symbolPen=DRAFT_COLOR, symbolBrush=DRAFT_COLOR
        )
        self._draft_in_legend = False
        # Each verify pass, once the reply ends: a tick on the token its time lands on, and where it rejected drafts,
        # a red label "-r" (speculative decoding).
        self.pass_item = LiveCurve(self.live_layer, DRAFT_COLOR, markers=True, shape="|", marker_pixels=17)
        self.pass_labels = [pg.TextItem("", color=PASS_COLOR, anchor=(0.5, 1.0)) for _ in range(PASS_LABELS)]
        for label in self.pass_labels:
            label.setVisible(False)
            self.addItem(label, ignoreBounds=True)
        self.pass_marks: list[tuple[int, int, int]] = []
        self._ttft_ms: float | None = None
        self._x = GrowableBuffer()
        # log10 of each gap and median, kept as they arrive: the curves are drawn on the log axis.
        self._log_y = GrowableBuffer()
        self._log_median = GrowableBuffer()
        # The same gaps split by who made the token: the model's own step (blue crosses) or an accepted draft.
        self._own_x, self._own_log_y = GrowableBuffer(), GrowableBuffer()
        self._draft_x, self._draft_log_y = GrowableBuffer(), GrowableBuffer()
        self._drawn_points = -1
        self._drawn_ttft_ms: float | None = None
        # Autoranging would re-lay out and re-render the axes on every token: x grows in doubling
        # steps and y (log) spans whole decades, so both change only a few times per reply.
        self._x_range = SteppedRange(self.setXRange, floor=32)
        self._x_range.reset()
        self._settled = False  # whether a reply has ended on this plot (its axis then starts the next one)
        self._y_decades: tuple[int, int] | None = None
        self._lowest_ms = self._highest_ms = None
        self._show_decades()

    def reset(self, budget_tokens: int | None = None) -> None:
        """budget_tokens: the reply's max new tokens; the window's first reply starts its axis there
        (gui/meter/first_reply_axes.py)."""
        # A reply starts on the axis the last one ended on (fitted to it by settle()): replies of a similar
        # length then stream without one re-layout of the axes, each of which cost a few ms of the window's CPU.
        self._ttft_ms = None
        buffers = (
            self._x,
            self._log_y,
            self._log_median,
            self._own_x,
            self._own_log_y,
            self._draft_x,
            self._draft_log_y,
        )
        for buffer in buffers:
            buffer.clear()
        self._drawn_points = -1
        self._drawn_ttft_ms = None
        self.ttft_item.setData([], [])
        for curve in (self.interval_item, self.marker_item, self.median_item, self.draft_item, self.pass_item):
            curve.clear()
        self._hide_pass_labels()
        self._show_draft_legend(False)
        self._lowest_ms = self._highest_ms = None
        self._show_decades()
        self.size_for_budget(budget_tokens)

    def size_for_budget(self, budget_tokens: int | None) -> None:
        """Until a reply has ended here, the token axis spans the budget (gui/meter/first_reply_axes.py)."""
        first_tokens = None if self._settled or len(self._x) else first_axis_tokens(budget_tokens)
        if first_tokens:
            self._x_range.reset(first_tokens)

    def add_ttft(self, ttft_ms: float) -> None:
        self._ttft_ms = ttft_ms
        self._extend_y(ttft_ms)

    def grow_ttft(self, elapsed_ms: float) -> None:
        """The TTFT so far, while the prompt's pass runs; add_ttft() replaces it with the real one."""
        self._ttft_ms = elapsed_ms
        # Not below the empty plot's 10 ms floor: a first frame a few ms in would widen the axis for nothing.
        self._extend_y(max(elapsed_ms, 10.0))

    def add_interval(self, index: int, interval_ms: float, running_median_ms: float, drafted: bool = False) -> None:
        """drafted: the token was an accepted draft (it cost no decode step of its own)."""
        self._extend_y(interval_ms)
        log_y = math.log10(max(interval_ms, FLOOR_MS))
        self._x.append(index)
        self._log_y.append(log_y)
        self._log_median.append(math.log10(max(running_median_ms, FLOOR_MS)))
        x, y = (self._draft_x, self._draft_log_y) if drafted else (self._own_x, self._own_log_y)
        x.append(index)
        y.append(log_y)

    def refresh(self) -> None:
        """Hand new points to the items; a frame with no new token costs nothing."""
        points = len(self._x) + (self._ttft_ms is not None)
        if points == self._drawn_points and self._ttft_ms == self._drawn_ttft_ms:
            return
        self._drawn_points = points
        if self._ttft_ms != self._drawn_ttft_ms:
            self._drawn_ttft_ms = self._ttft_ms
            if self._ttft_ms is None:
                self.ttft_item.setData([], [])
            else:
                self.ttft_item.setData([0], [math.log10(max(self._ttft_ms, FLOOR_MS))])
        x = self._x.view()
        self._x_range.set_if_grown(len(x) + 1)
        self._show_decades()
        self.interval_item.set_points(x, self._log_y.view())
        self.median_item.set_points(x, self._log_median.view())
        self._show_markers()
        if len(self._draft_x):
            self._show_draft_legend(True)
        self.draft_item.set_points(self._draft_x.view(), self._draft_log_y.view())

    def settle(self) -> None:
        """Draw every point, once the reply has ended, on axes fitted to them."""
        self.refresh()
        self._settled = True
        self._x_range.reset(len(self._x) + 1)
        self._show_decades(fit=True)

    def show_passes(self, marks: list[tuple[int, int, int]]) -> None:
        """A finished reply's verify passes, (first token, drafts, rejected): a tick on the token each pass's time
        landed on, and a red "-r" over those that rejected r drafts (the first PASS_LABELS of them)."""
        self.pass_marks = list(marks)
        self._hide_pass_labels()
        where = {int(index): log_y for index, log_y in zip(self._x.view(), self._log_y.view())}
        shown = [(token, rejected) for token, _, rejected in marks if token in where]
        self.pass_item.set_points(
            np.array([token for token, _ in shown], dtype=float), np.array([where[token] for token, _ in shown])
        )
        rejecting = [(token, rejected) for token, rejected in shown if rejected]
        for label, (token, rejected) in zip(self.pass_labels, rejecting):
            label.setText(f"-{rejected}")
            label.setPos(token, where[token])
            label.setVisible(True)

    def _hide_pass_labels(self) -> None:
        for label in self.pass_labels:
            if label.isVisible():
                label.setVisible(False)

    @property
    def labelled_passes(self) -> int:
        return sum(label.isVisible() for label in self.pass_labels)

    def marker_count(self) -> int:
        """The blue crosses: gaps before tokens the model made in a step of its own."""
        return len(self.marker_item.getData()[0])

    def drafted_count(self) -> int:
        """The purple crosses: accepted draft tokens."""
        return len(self.draft_item.getData()[0])

    def _show_markers(self) -> None:
        if len(self._x) > SYMBOL_LIMIT:
            # Past this many points the markers merge into the line; the line alone reads better. The drafts' crosses
            # stay: they lie apart, at the bottom, and they are what a speculating reply is looked at for.
            if self.marker_count():
                self.marker_item.clear()
            return
        self.marker_item.set_points(self._own_x.view(), self._own_log_y.view())

    def _show_draft_legend(self, shown: bool) -> None:
        """Once a reply: the legend's entry for accepted drafts joins with the first, and leaves with the reply."""
        if shown == self._draft_in_legend:
            return
        self._draft_in_legend = shown
        legend = self.getPlotItem().legend
        if shown:
            legend.addItem(self._draft_sample, DRAFT_LEGEND)
        else:
            legend.removeItem(self._draft_sample)
        legend.fit_columns(self.getViewBox().width())
        hold_data_height_again(self)

    def _extend_y(self, value_ms: float) -> None:
        value_ms = max(value_ms, FLOOR_MS)
        self._lowest_ms = value_ms if self._lowest_ms is None else min(self._lowest_ms, value_ms)
        self._highest_ms = value_ms if self._highest_ms is None else max(self._highest_ms, value_ms)

    def _show_decades(self, fit: bool = False) -> None:
        """Set the y range to the whole decades around the data (EMPTY_DECADES before any). While a reply streams the
        range only widens (it starts as the last reply's); fit=True narrows it to this reply's data."""
        if self._lowest_ms is None or self._highest_ms is None:
            decades = self._y_decades or EMPTY_DECADES
        else:
            decades = (math.floor(math.log10(self._lowest_ms)), math.ceil(math.log10(self._highest_ms)))
            decades = (decades[0], max(decades[1], decades[0] + 1))
            if self._y_decades is not None and not fit:
                decades = (min(decades[0], self._y_decades[0]), max(decades[1], self._y_decades[1]))
        if decades != self._y_decades:
            self._y_decades = decades
            # In log10 units (the axis is logarithmic), padded so the end decades keep their labels.
            self.setYRange(*decades, padding=0.08)
            # Only the decades are labelled: pyqtgraph's in-between labels overlap on a short plot (and on a very
            # short one, only every other decade: gui/plotting/spaced_axis.py).
            self.getAxis("left").set_labelled_ticks(
                [(power, decade_label(power)) for power in range(decades[0], decades[1] + 1)]
            )
