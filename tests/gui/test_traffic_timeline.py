"""The traffic timeline's bars: a request's wait and output bars meet, and neither is drawn backwards."""

from __future__ import annotations

import pytest

from gui.traffic.timeline_plot import TimelinePlot

ZERO_NS = 78_972_907_092_507  # a proxy's start on the perf_counter_ns clock, as a CI run had it


@pytest.fixture
def timeline(qtbot):
    plot = TimelinePlot()
    qtbot.addWidget(plot)
    plot.begin(ZERO_NS)
    return plot


def test_a_reply_whose_tokens_came_in_one_read_is_drawn_without_a_backwards_output_bar(timeline):
    # Every token in one read: E2E (to the last token) equals TTFT, and start + E2E rounds below the first token's
    # own reading on the plot's clock.
    start_ns, first_ns = ZERO_NS + 23_591_503, ZERO_NS + 25_682_221
    e2e_s = (first_ns - start_ns) / 1e9
    assert (start_ns - ZERO_NS) / 1e9 + e2e_s < (first_ns - ZERO_NS) / 1e9  # the rounding this test is about
    timeline.add(1, start_ns)
    timeline.finish(1, start_ns, first_ns, e2e_s, first_ns + 1_000_000)
    timeline.refresh(first_ns + 2_000_000)
    ((wait_start, wait_end, _),) = timeline.bars(timeline.wait_bars)
    ((output_start, output_end, _),) = timeline.bars(timeline.output_bars)
    assert wait_start < wait_end == output_start <= output_end
    ((tail_start, tail_end, _),) = timeline.bars(timeline.tail_bars)
    assert tail_start == output_end and tail_end == pytest.approx(0.026682221)


def one_failed_request_shown(qtbot, timeline, start_ns: int):
    """A request that failed a millisecond after start_ns, drawn on a shown plot; the plot's (x, y) ranges."""
    timeline.resize(500, 250)
    timeline.show()
    qtbot.waitExposed(timeline)
    timeline.add(1, start_ns)
    timeline.finish(1, start_ns, None, None, start_ns + 1_000_000)
    timeline.refresh(start_ns + 2_000_000)
    timeline.getViewBox().updateAutoRange()
    return timeline.getViewBox().viewRange()


def test_one_short_request_is_a_bar_on_a_readable_clock_with_whole_request_numbers(qtbot, timeline):
    """A failed request of a millisecond filled the plot as a grey slab on a 2.0838–2.0848 s axis, beside request
    numbers 0.7, 0.8, ... 1.3."""
    (x_low, x_high), (y_low, y_high) = one_failed_request_shown(qtbot, timeline, ZERO_NS + 2_083_800_000)
    assert x_high - x_low >= 0.999 and y_high - y_low >= 3.999
    axis = timeline.getAxis("left")
    values = [value for _, level in axis.tickValues(y_low, y_high, 200) for value in level]
    assert values and all(float(value).is_integer() for value in values)


def test_a_request_in_the_proxys_first_moment_is_drawn_on_a_clock_from_zero(qtbot, timeline):
    """A 502 of a millisecond, 30 ms after the proxy started: no bar could be seen, on an axis from -400 to 400
    "(x0.001)" beside lanes 0, 1 and 2."""
    (x_low, x_high), (y_low, _) = one_failed_request_shown(qtbot, timeline, ZERO_NS + 30_000_000)
    assert x_low >= 0.0 and x_high >= 0.999 and y_low >= 0.0
    assert timeline.getAxis("bottom").autoSIPrefixScale == 1.0  # seconds, as the axis is labelled
    ((start, end, lane),) = timeline.bars(timeline.tail_bars)
    assert lane == 1 and end - start == pytest.approx(0.001)
    pen = timeline.tail_bars.opts["pen"]
    assert pen.isCosmetic() and pen.width() >= 1  # a pixel wide at least, whatever the bar's length
