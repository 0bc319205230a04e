"""Overlapping requests through the proxy on one clock: a bar per request, its wait for the first token shaded apart
from its output, so requests that queue behind each other or share the server can be seen doing so."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from gui.plotting.empty_note import EmptyPlotNote
from gui.plotting.growable_buffer import GrowableBuffer
from gui.plotting.page_plot import PagePlot
from gui.plotting.plot_style import style_plot

WAIT_COLOR = "#e8710a"  # the prefill's colour in the meter: request sent → first token
OUTPUT_COLOR = "#1a73e8"  # first token → last token
TAIL_COLOR = "#9aa0a6"  # last token → the response's last byte (a usage chunk, say), and requests not metered
CHOSEN_COLOR = (26, 115, 232, 40)  # the lane of the request chosen in the table: a faint band behind its bar
SHOWN = 200  # the last this many requests are drawn; older ones scroll away
BAR_HEIGHT = 0.7
MIN_SECONDS_SHOWN = 1.0
MIN_LANES_SHOWN = 4.0


class TimelinePlot(PagePlot):
    """Bars made once; their data are numpy buffers, pushed to the items once a frame (refresh)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        style_plot(
            self,
            title="Requests over time",
            bottom="seconds since the proxy started",
            left="request",
            tooltip="One bar per request, on one clock (perf_counter_ns). Orange: from the request to its first "
            "token (queue and prefill); blue: from the first token to the last (decode); grey: the rest of the "
            "response, or a request that was only passed through. Bars still growing are running now.",
        )
        self.getPlotItem().invertY(True)  # the first request at the top, as in the table
        self.getAxis("left").whole_numbers = True
        # One short request filled the plot with a grey slab over a millisecond's axis: a second and a few lanes at
        # the least, so a bar's length reads against the others' and the clock's.
        # Nothing happens before the proxy starts, and no request is numbered below 1: a request in the proxy's first
        # half second was centred on an axis from -0.4 s, in thousandths ("x0.001"), beside lanes 0 to 2.
        self.getViewBox().setLimits(minXRange=MIN_SECONDS_SHOWN, minYRange=MIN_LANES_SHOWN, xMin=0.0, yMin=0.0)
        self.getAxis("bottom").enableAutoSIPrefix(False)
        self._zero_ns = 0
        self._lane: dict[int, int] = {}
        self.ids = GrowableBuffer(dtype=np.int64)
        self.start_s = GrowableBuffer()
        self.first_s = GrowableBuffer()  # nan until the first token
        self.last_s = GrowableBuffer()  # nan while running
        self.end_s = GrowableBuffer()  # nan while running
        self.wait_bars = self._bars(WAIT_COLOR)
        self.output_bars = self._bars(OUTPUT_COLOR)
        self.tail_bars = self._bars(TAIL_COLOR)
        # The table's chosen request, found on the timeline: a band across its lane, made once and moved.
        self.chosen_band = pg.LinearRegionItem(
            orientation="horizontal", movable=False, brush=pg.mkBrush(CHOSEN_COLOR), pen=pg.mkPen(None)
        )
        self.chosen_band.setZValue(-10)  # behind the bars
        self.chosen_band.setVisible(False)
        self.addItem(self.chosen_band, ignoreBounds=True)
        self._chosen: int | None = None
        self.note = EmptyPlotNote(self, "Start the proxy and point a tool at it;\nits requests appear here.")
        self._changed = False

    def _bars(self, color: str) -> pg.BarGraphItem:
        # Outlined in their own colour, one pixel at any zoom: a request of a millisecond on a one-second axis is
        # under a pixel wide, and a fill alone drew nothing.
        bars = pg.BarGraphItem(x0=[], x1=[], y0=[], height=[], brush=color, pen=pg.mkPen(color, width=1, cosmetic=True))
        self.addItem(bars)
        return bars

    def begin(self, zero_ns: int) -> None:
        """A proxy started: its clock's zero; earlier bars are cleared."""
        self._zero_ns = zero_ns
        self._lane.clear()
        self.mark(None)
        for buffer in (self.ids, self.start_s, self.first_s, self.last_s, self.end_s):
            buffer.clear()
        self._changed = True
        self.note.show_when(True)

    def add(self, request_id: int, start_ns: int) -> None:
        self._lane[request_id] = len(self.ids)
        self.ids.append(request_id)
        for buffer, value in (
            (self.start_s, self._seconds(start_ns)),
            (self.first_s, np.nan),
            (self.last_s, np.nan),
            (self.end_s, np.nan),
        ):
            buffer.append(value)
        self._changed = True

    def first_token(self, request_id: int, ttft_s: float | None) -> None:
        lane = self._lane.get(request_id)
        if lane is not None and ttft_s is not None and np.isnan(self.first_s.view()[lane]):
            self.first_s.view()[lane] = self.start_s.view()[lane] + ttft_s
            self._changed = True

    def finish(self, request_id: int, start_ns: int, first_ns: int | None, e2e_s: float | None, end_ns: int) -> None:
        lane = self._lane.get(request_id)
        if lane is None:
            return
        start = self._seconds(start_ns)
        self.first_s.view()[lane] = self._seconds(first_ns) if first_ns is not None else np.nan
        self.last_s.view()[lane] = start + e2e_s if e2e_s is not None else np.nan
        self.end_s.view()[lane] = self._seconds(end_ns)
        self._changed = True

    def refresh(self, now_ns: int) -> None:
        """A frame: running bars grow to now; finished ones are drawn as they ended."""
        running = np.isnan(self.end_s.view()[-SHOWN:]) if len(self.ids) else np.zeros(0, bool)
        if not self._changed and not running.any():
            return
        self._changed = False
        now = self._seconds(now_ns)
        lanes = self.ids.view()[-SHOWN:].astype(float)
        start = self.start_s.view()[-SHOWN:]
        first = self.first_s.view()[-SHOWN:]
        last = self.last_s.view()[-SHOWN:]
        end = np.where(running, now, self.end_s.view()[-SHOWN:])
        has_first = ~np.isnan(first)
        # The last token is stamped as start + E2E, the first on its own clock reading: the two can differ by a
        # rounding where every token came in one read, and a bar is never drawn backwards.
        output_end = np.fmax(np.where(np.isnan(last), end, last), first)
        wait_end = np.where(has_first, first, end)
        self._set(self.wait_bars, start, wait_end, lanes, has_first | running)
        self._set(self.output_bars, first, output_end, lanes, has_first)
        tail_start = np.where(has_first, output_end, start)  # a request with no output is grey throughout
        self._set(self.tail_bars, tail_start, end, lanes, ~running & (end > tail_start))
        self.note.show_when(len(lanes) == 0)
        if self._chosen is not None:
            self._show_chosen()

    def mark(self, request_id: int | None) -> None:
        """Band the lane of the request chosen in the table (None: no band)."""
        self._chosen = request_id
        self._show_chosen()

    def _show_chosen(self) -> None:
        chosen = self._chosen
        lane = self._lane.get(chosen) if chosen is not None else None
        shown = chosen is not None and lane is not None and lane >= len(self.ids) - SHOWN  # not scrolled away
        if chosen is not None and shown:
            self.chosen_band.setRegion((chosen - 0.5, chosen + 0.5))
        self.chosen_band.setVisible(shown)

    def bars(self, item: pg.BarGraphItem) -> list[tuple[float, float, float]]:
        """(start, end, lane) of each bar an item draws, in seconds: what the plot shows."""
        options = item.opts
        return [
            (float(a), float(b), float(y) + BAR_HEIGHT / 2)
            for a, b, y in zip(options["x0"], options["x1"], options["y0"])
        ]

    @staticmethod
    def _set(item: pg.BarGraphItem, start: np.ndarray, end: np.ndarray, lanes: np.ndarray, keep: np.ndarray) -> None:
        item.setOpts(x0=start[keep], x1=end[keep], y0=lanes[keep] - BAR_HEIGHT / 2, height=BAR_HEIGHT)

    def _seconds(self, stamp_ns: int) -> float:
        return (stamp_ns - self._zero_ns) / 1e9
