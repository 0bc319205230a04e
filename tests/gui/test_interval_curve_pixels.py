"""Issue #14: a reply's interval curve, grown frame by frame and finished, is drawn in one colour, uncovered."""

import math

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor

from core.timing.events import TokenEvent
from core.timing.trace import ReplyTrace
from gui.meter.interval_plot import INTERVAL_COLOR
from gui.meter.meter_panel import MeterPanel

pytestmark = pytest.mark.plots

TOKENS = 122
# About what float32 decode takes per token on a two-core machine: the level the legend used to cover.
GAP_MS = 48.0


def _gaps(tokens: int = TOKENS) -> list[float]:
    return [GAP_MS + 6.0 * math.sin(index / 4.0) for index in range(1, tokens)]


def _run_a_reply(qtbot, tokens: int = TOKENS) -> MeterPanel:
    """A reply's tokens arrive a few per frame, as the window's 25 Hz timer sees them, then it finishes."""
    meter = MeterPanel()
    qtbot.addWidget(meter)
    meter.resize(540, 720)
    meter.show()
    qtbot.waitExposed(meter)
    start_ns = 1_000_000_000
    meter.begin_reply(start_ns)
    trace = ReplyTrace(request_start_ns=start_ns, prompt_tokens=40)
    stamp_ns = start_ns + 300_000_000
    for index, gap in enumerate([0.0] + _gaps(tokens)):
        stamp_ns += int(gap * 1e6)
        event = TokenEvent(index=index, token_id=index, text=f"{index},", timestamp_ns=stamp_ns)
        trace.record(event)
        meter.record_token(event)
        if index % 3 == 2:
            meter.tick(stamp_ns, streaming=True, trace=trace)
    meter.finish_reply(trace, streaming=True)
    return meter


def _point_pixels(plot, x: np.ndarray, log_y: np.ndarray) -> list[tuple[int, int]]:
    view = plot.getViewBox()
    pixels = []
    for px, py in zip(x, log_y):
        scene = view.mapViewToScene(QPointF(float(px), float(py)))
        local = plot.mapFromScene(scene)
        pixels.append((round(local.x()), round(local.y())))
    return pixels


def _is_curve_colour(colour: QColor) -> bool:
    """The curve's blue; pyqtgraph's faint grid, drawn over the data, shifts it by 25 levels at most.
    Under the old legend's translucent white box it was (206, 225, 250)."""
    curve = QColor(INTERVAL_COLOR)
    return all(abs(a - b) <= 40 for a, b in zip(colour.getRgb()[:3], curve.getRgb()[:3]))


@pytest.mark.parametrize("tokens", [TOKENS, 700])  # 700: the curves are kept in pieces (gui/plotting/live_curve.py)
def test_every_point_of_a_finished_reply_is_drawn_in_the_curve_colour(qtbot, tokens):
    meter = _run_a_reply(qtbot, tokens)
    plot = meter.interval_plot
    image = plot.grab().toImage()
    x, log_y = plot.interval_item.getData()
    assert len(x) == tokens - 1
    uncovered = []
    for index, (column, row) in zip(x, _point_pixels(plot, x, log_y)):
        # The point's cross spans two pixels either side of it: some of them must have the curve's colour.
        colours = [image.pixelColor(column + dx, row + dy) for dx in (-1, 0, 1) for dy in range(-3, 4)]
        if not any(_is_curve_colour(colour) for colour in colours):
            uncovered.append(int(index))
    assert uncovered == [], f"points drawn pale or hidden: {uncovered}"


def test_every_gap_of_a_finished_reply_is_in_its_curves_paths(qtbot):
    """Grown a few points a frame, each path holds every gap once: a point per gap on the lines, a '+' on the crosses."""
    meter = _run_a_reply(qtbot)
    plot = meter.interval_plot
    assert plot.interval_item.drawn_elements() == plot.median_item.drawn_elements() == TOKENS - 1
    assert plot.marker_item.drawn_elements() == 4 * (TOKENS - 1)


def test_the_legend_hides_no_data(qtbot):
    meter = _run_a_reply(qtbot)
    for plot in (meter.interval_plot, meter.visible_plot, meter.history_plot):
        meter.views.show_view(plot)  # the history has a tab of its own
        qtbot.waitUntil(plot.isVisible)
        legend = plot.getPlotItem().legend
        assert legend.isVisible()
        # Laid out once the tab is shown.
        qtbot.waitUntil(lambda plot=plot: plot.getViewBox().sceneBoundingRect().height() < plot.height())
        assert not legend.sceneBoundingRect().intersects(plot.getViewBox().sceneBoundingRect()), plot
        # Every entry is on screen: none is cut off at the plot's right edge.
        visible = plot.mapToScene(plot.viewport().rect()).boundingRect()
        for _sample, label in legend.items:
            assert visible.contains(label.sceneBoundingRect()), label.text
