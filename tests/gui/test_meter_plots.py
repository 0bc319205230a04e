"""The interval plot's axis labels and markers, without a model: points fed straight in."""

import math

import pytest
from PySide6.QtCore import QEvent, QObject, QPointF, QRect

from gui.meter.interval_plot import IntervalPlot, decade_label
from gui.meter.visible_text_plot import VisibleTextPlot

pytestmark = pytest.mark.plots


def test_decades_are_labelled_in_human_units():
    assert [decade_label(power) for power in (-1, 0, 1, 2, 3, 4)] == [
        "100 µs",
        "1 ms",
        "10 ms",
        "100 ms",
        "1 s",
        "10 s",
    ]


def test_log_axis_shows_the_decades_around_the_data_and_one_cross_per_gap(qtbot):
    plot = IntervalPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    plot.add_ttft(850.0)
    gaps = [12.5, 14.0, 3.2, 13.1]
    for index, gap in enumerate(gaps, start=1):
        plot.add_interval(index, gap, sorted(gaps[:index])[(index - 1) // 2])
    plot.refresh()
    major, minor = plot.getAxis("left")._tickLevels  # what setTicks was given
    assert [label for _, label in major] == ["1 ms", "10 ms", "100 ms", "1 s"] and minor == []
    low, high = plot.getViewBox().viewRange()[1]
    assert low < 0 < math.log10(3.2) and math.log10(850) < 3 < high
    x, y = plot.marker_item.getData()
    assert list(x) == [1, 2, 3, 4] and [10**value for value in y] == pytest.approx(gaps)
    # Four segment pairs (a '+') per gap.
    assert plot.marker_item.drawn_elements() == 4 * len(gaps)


def _feed(plot: IntervalPlot, gaps, refresh_every: int | None) -> None:
    plot.add_ttft(400.0)
    for index, gap in enumerate(gaps, start=1):
        plot.add_interval(index, gap, sorted(gaps[:index])[(index - 1) // 2])
        if refresh_every and index % refresh_every == 0:
            plot.refresh()
    plot.refresh()


def _shown_plot(qtbot) -> IntervalPlot:
    plot = IntervalPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    return plot


def test_a_curve_grown_frame_by_frame_looks_exactly_like_one_drawn_at_once(qtbot):
    # Gaps that wander over two decades, so markers, lines and the y range all change as it grows.
    gaps = [10.0 + 7.0 * math.sin(index / 5.0) + (90.0 if index % 37 == 0 else 0.0) for index in range(1, 241)]
    grown, at_once = _shown_plot(qtbot), _shown_plot(qtbot)
    _feed(grown, gaps, refresh_every=3)
    _feed(at_once, gaps, refresh_every=None)
    assert grown.grab().toImage() == at_once.grab().toImage()
    assert grown.marker_item.drawn_elements() == 4 * len(gaps)


def test_a_new_reply_replaces_the_curve_instead_of_extending_it(qtbot):
    plot = _shown_plot(qtbot)
    _feed(plot, [12.0] * 50, refresh_every=3)
    plot.reset()
    _feed(plot, [30.0] * 5, refresh_every=2)
    # The same two replies drawn at once: the second starts on the axes the first ended on.
    at_once = _shown_plot(qtbot)
    _feed(at_once, [12.0] * 50, refresh_every=None)
    at_once.reset()
    _feed(at_once, [30.0] * 5, refresh_every=None)
    assert plot.grab().toImage() == at_once.grab().toImage()
    x, y = plot.interval_item.getData()
    assert list(x) == [1, 2, 3, 4, 5] and [10**value for value in y] == pytest.approx([30.0] * 5)
    assert plot.marker_item.drawn_elements() == 4 * 5


def _range_changes(plot) -> list:
    """Each change of the plot's x or y range, as "x" or "y", in order: what the view box reports (the plots set their
    ranges through bound methods they keep, so patching the plot's setters would see nothing)."""
    changes = []
    view = plot.getViewBox()
    view.sigXRangeChanged.connect(lambda *_: changes.append("x"))
    view.sigYRangeChanged.connect(lambda *_: changes.append("y"))
    return changes


def test_a_reply_like_the_last_streams_without_relaying_out_the_axes(qtbot):
    plot = _shown_plot(qtbot)
    _feed(plot, [12.0] * 60, refresh_every=3)
    plot.settle()
    plot.reset()
    changes = _range_changes(plot)
    _feed(plot, [14.0] * 55, refresh_every=3)
    assert changes == []
    assert plot.getViewBox().viewRange()[0][1] > 60  # and all of it shows


def test_a_streaming_reply_repaints_its_points_without_redrawing_the_plot_behind_them(qtbot):
    """The plot behind the live curves (grid, axes) is pictured once; a reply like the last streams on that picture,
    and its frames repaint only the strip of their new points."""
    plot = _shown_plot(qtbot)
    qtbot.waitExposed(plot)
    _feed(plot, [12.0] * 60, refresh_every=3)
    plot.settle()
    plot.reset()
    layer = plot.live_layer
    painted = []
    layer.installEventFilter(recorder := _PaintRecorder(painted))
    plot.add_ttft(400.0)
    for index in range(1, 40):
        plot.add_interval(index, 14.0, 14.0)
        plot.refresh()
        qtbot.waitUntil(lambda: bool(painted), timeout=2000)
        if index == 5:  # the reply's start is over: what the reset changed behind the curves is pictured
            taken = layer.backdrops_taken
        elif index > 5:
            assert all(rect.width() < layer.width() / 4 for rect in painted), (index, painted)  # a strip
        painted.clear()
    layer.removeEventFilter(recorder)
    assert layer.backdrops_taken == taken


class _PaintRecorder(QObject):
    def __init__(self, rects: list):
        super().__init__()
        self._rects = rects

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint:
            self._rects.append(event.rect())
        return False


def test_a_short_reply_after_a_long_one_ends_on_an_axis_fitted_to_it(qtbot):
    plot = _shown_plot(qtbot)
    _feed(plot, [12.0] * 500, refresh_every=50)
    plot.settle()
    plot.reset()
    _feed(plot, [12.0] * 20, refresh_every=5)
    assert plot.getViewBox().viewRange()[0][1] > 500  # while it streams, the long reply's axis stays
    plot.settle()
    assert 20 < plot.getViewBox().viewRange()[0][1] < 40


def test_the_visible_text_plot_keeps_the_previous_reply_in_view(qtbot):
    from gui.meter.visible_text_plot import VisibleTextPlot

    plot = VisibleTextPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    for step in range(1, 31):
        plot.show_characters(step * 0.1, step * 20)
        plot.refresh()
    plot.reset()
    (_, x_high), (_, y_high) = plot.getViewBox().viewRange()
    assert x_high >= 3.0 and y_high >= 600  # the faded previous reply shows whole from the start
    changes = _range_changes(plot)
    for step in range(1, 29):
        plot.show_characters(step * 0.1, step * 20)
        plot.refresh()
    assert changes == []
    plot.forget_previous()
    plot.reset()
    assert not len(plot.previous_item.getData()[0]) and len(plot.points()[0]) == 1


def test_the_history_plot_reads_from_zero_even_with_one_reply(qtbot):
    from gui.meter.history_plot import HistoryPlot

    plot = HistoryPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    plot.add_reply(44, 0.153, 0.0133)
    plot.refresh()
    (x_low, x_high), (y_low, y_high) = plot.getViewBox().viewRange()
    assert x_low <= 0 < 44 < x_high and y_low <= 0 < 153 < y_high
    plot.add_reply(900, 0.95, 0.0135)
    plot.refresh()
    (x_low, x_high), (y_low, y_high) = plot.getViewBox().viewRange()
    assert x_low <= 0 < 900 < x_high and y_low <= 0 < 950 < y_high
    assert list(plot.ttft_item.getData()[0]) == [44, 900]


def test_before_any_reply_the_history_plot_says_what_will_appear(qtbot):
    from gui.meter.history_plot import HistoryPlot

    plot = HistoryPlot()
    qtbot.addWidget(plot)
    plot.refresh()
    assert plot.empty_note.shown and not plot.getPlotItem().getAxis("left").isVisible()
    plot.add_reply(44, 0.153, 0.0133)
    plot.refresh()
    assert not plot.empty_note.shown and plot.getPlotItem().getAxis("left").isVisible()
    plot.clear_history()
    plot.refresh()
    assert plot.empty_note.shown


def test_the_visible_text_plot_starts_on_a_reply_s_own_axes(qtbot):
    from gui.meter.visible_text_plot import VisibleTextPlot

    plot = VisibleTextPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    (x_low, x_high), (y_low, y_high) = plot.getViewBox().viewRange()
    assert x_low <= 0 and 1 <= x_high < 2 and y_low <= 0 and 64 <= y_high < 128


def test_the_legend_shows_the_ttft_square_in_its_own_colour(qtbot):
    from gui.meter.interval_plot import TTFT_COLOR

    plot = _shown_plot(qtbot)
    samples = {label.text: sample for sample, label in plot.getPlotItem().legend.items}
    scatter = samples["TTFT (prefill)"].item.scatter
    assert scatter.opts["symbol"] == "s" and scatter.opts["brush"].color().name() == TTFT_COLOR


def _label_runs_along_the_whole_plot(plot) -> None:
    """The left axis's rotated label, its text without the item's margins, lies within the plot's height."""
    label = plot.getAxis("left").label
    margin = label.document().documentMargin()
    text = label.boundingRect().adjusted(margin, margin, -margin, -margin)
    drawn = plot.mapFromScene(label.mapToScene(text)).boundingRect()
    height = plot.viewport().height()
    assert drawn.top() >= 0 and drawn.bottom() <= height, f"{plot.left_label.shown!r} runs off a {height} px plot"


@pytest.mark.parametrize("plot_class", [IntervalPlot, VisibleTextPlot])
def test_the_y_axis_label_is_whole_on_a_short_plot_and_full_on_a_tall_one(qtbot, plot_class):
    plot = plot_class()
    qtbot.addWidget(plot)
    plot.show()
    full = plot.left_label.shown
    plot.resize(500, 110)  # shorter than the meter gives a plot (issue 41): the full wording does not fit
    qtbot.waitUntil(lambda: _label_runs_along_the_whole_plot(plot))
    assert plot.left_label.shown != full
    plot.resize(500, 400)
    qtbot.waitUntil(lambda: _label_runs_along_the_whole_plot(plot))
    qtbot.waitUntil(lambda: plot.left_label.shown == full)  # with room, the whole wording is back


def test_the_count_stays_drawn_flat_until_now_while_no_text_comes(qtbot):
    """Text stopped at 0.4 s (80 characters); at 1.6 s the staircase runs flat to 1.6 s, frame by frame, and no
    further."""
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QColor

    plot = VisibleTextPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    qtbot.waitExposed(plot)
    for step in range(1, 5):
        plot.show_characters(step * 0.1, step * 20)
        plot.refresh()
    for tenth in range(5, 17):
        plot.advance_clock(tenth / 10)  # frames with no new text
        plot.refresh()
    layer = plot.live_layer
    image = plot.grab().toImage()

    def drawn_at(seconds: float) -> bool:
        point = layer.pos() + layer.data_transform().map(QPointF(seconds, 80.0)).toPoint()
        colours = [image.pixelColor(point.x(), point.y() + dy) for dy in (-1, 0, 1)]
        return any(colour == QColor("#1a73e8") for colour in colours)

    assert all(drawn_at(seconds) for seconds in (0.5, 1.0, 1.55))
    assert not drawn_at(1.8)


def test_the_character_axis_steps_with_the_time_axis_not_on_its_own(qtbot):
    """A new chat's first reply outgrows both axes of 'what the user saw'; each step re-lays out the plot, so the
    character axis steps ahead of the text and with the time axis, not at every power of two the count passes."""
    from gui.meter.visible_text_plot import VisibleTextPlot

    plot = VisibleTextPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 250)
    plot.show()
    changes = _range_changes(plot)
    alone = 0
    for frame in range(1, 91):  # 3 s of frames, text at 500 characters a second after a 0.2 s wait
        seconds = frame / 30
        before = len(changes)
        plot.show_characters(seconds, int(max(0.0, seconds - 0.2) * 500))
        plot.refresh()
        stepped = changes[before:]
        alone += stepped == ["y"]
        (_, x_high), (_, y_high) = plot.getViewBox().viewRange()
        assert x_high >= seconds and y_high >= plot.points()[1][-1]  # all of it shows, every frame
    assert changes.count("x") == 2  # 1 -> 2 -> 4 s
    assert alone <= 2  # 64 -> 256 -> 512 characters in the first second; later steps come with the time axis's


def _filled(plot_class):
    plot = plot_class()
    if plot_class is IntervalPlot:
        _feed(plot, [12.5, 14.0, 3.2, 13.1], refresh_every=None)  # TTFT 400 ms, gaps of 3-14 ms: four decades
    else:
        for step in range(1, 31):
            plot.show_characters(step * 0.1, step * 35)  # to 1,050 characters: 0-2,048 on the axis
            plot.refresh()
    return plot


def _tick_label_rects(plot) -> list:
    from PySide6.QtGui import QImage, QPainter

    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = plot.getAxis("left").generateDrawSpecs(painter)
    finally:
        painter.end()
    return [rect for rect, _, _ in texts]


def _overlapping(rects) -> list:
    return [(a, b) for i, a in enumerate(rects) for b in rects[i + 1 :] if a.intersects(b)]


@pytest.mark.parametrize("plot_class", [IntervalPlot, VisibleTextPlot])
def test_the_y_tick_labels_never_overlap_even_on_the_least_plot_height(qtbot, plot_class):
    """At the meter's least plot height pyqtgraph labelled 0, 200, ... 800 within 25 px, and the interval plot's
    four decades within 30: the digits ran into each other. Fewer values are labelled there instead."""
    plot = _filled(plot_class)
    qtbot.addWidget(plot)
    plot.show()
    for height in (140, 400):
        plot.resize(570, height)
        qtbot.waitUntil(lambda height=height: abs(plot.height() - height) <= 1)
        qtbot.waitUntil(lambda: len(_tick_label_rects(plot)) >= 1)  # a label shows, however short the plot
        rects = _tick_label_rects(plot)
        overlapping = _overlapping(rects)
        assert not overlapping, f"{len(overlapping)} overlapping labels at {height} px: {rects}"
    assert len(rects) >= 4  # with room, as many labels as before


def test_zooming_the_interval_plot_labels_the_decades_it_has_room_for(qtbot):
    plot = _filled(IntervalPlot)
    qtbot.addWidget(plot)
    plot.resize(570, 400)
    plot.show()
    qtbot.waitUntil(lambda: len(_tick_label_rects(plot)) >= 4)
    plot.getViewBox().setYRange(-60, 90, padding=0)  # zoomed far out: 150 decades in the same height
    rects = _tick_label_rects(plot)
    assert 1 <= len(rects) < 4
    assert not _overlapping(rects)


def test_the_history_plot_shows_its_highest_reply_whole_on_the_least_plot_height(qtbot):
    from PySide6.QtCore import QPointF

    from gui.meter.history_plot import HistoryPlot

    plot = HistoryPlot()
    qtbot.addWidget(plot)
    plot.show()
    plot.add_reply(40, 0.0867, 0.0076)  # the screenshot's reply: its TTFT square sat on the top edge, half cut off
    plot.refresh()
    view = plot.getViewBox()
    for height in (140, 400):
        plot.resize(570, height)
        qtbot.waitUntil(lambda height=height: abs(plot.height() - height) <= 1)
        top = plot.mapFromScene(view.mapViewToScene(QPointF(40, 86.7))).y()
        bottom = plot.mapFromScene(view.mapViewToScene(QPointF(40, 0))).y()
        area = plot.mapFromScene(view.sceneBoundingRect()).boundingRect()
        assert top - 3.5 >= area.top() and bottom + 3.5 <= area.bottom() + 1, (height, top, area)


def test_what_the_user_saw_ends_on_axes_fitted_to_the_reply(qtbot):
    """While text streams the character axis steps ahead of it; a reply that stops soon after is then shown on
    axes that fit it, not on the room left for more."""
    plot = VisibleTextPlot()
    qtbot.addWidget(plot)
    plot.resize(570, 250)
    plot.show()
    for frame in range(1, 34):  # 1.1 s, text at 500 characters a second after 0.2 s: 450 characters
        seconds = frame / 30
        plot.show_characters(seconds, int(max(0.0, seconds - 0.2) * 500))
        plot.refresh()
    (_, streaming_x), (_, streaming_y) = plot.getViewBox().viewRange()
    plot.settle()
    (_, x_high), (_, y_high) = plot.getViewBox().viewRange()
    assert streaming_y > 1000 and 450 <= y_high < 600 and 1.1 <= x_high <= streaming_x


def test_a_window_s_first_reply_streams_on_axes_sized_for_its_budget(qtbot):
    """A later reply starts on the axes the last one ended on; the first had only the empty plots' small axes, and a
    128-token reply stepped them seven times (each a re-layout and a new picture of the plot)."""
    from gui.meter.meter_panel import MeterPanel

    meter = MeterPanel()
    qtbot.addWidget(meter)
    meter.resize(600, 700)
    meter.show()
    meter.size_for_budget(256)  # max new tokens, as the window's settings say before any reply
    intervals, seen = meter.interval_plot, meter.visible_plot
    assert intervals.getViewBox().viewRange()[0][1] == pytest.approx(256, rel=0.05)
    assert seen.getViewBox().viewRange()[1][1] == pytest.approx(1024, rel=0.1)  # 4 characters a token
    meter.size_for_budget(64)  # changed before the first reply: the axes follow, down as well as up
    assert intervals.getViewBox().viewRange()[0][1] == pytest.approx(64, rel=0.05)
    meter.size_for_budget(256)
    changes = (_range_changes(intervals), _range_changes(seen))
    meter.begin_reply(0, 256)
    _feed(intervals, [5.0] * 127, refresh_every=8)  # 128 tokens, as the budget allows
    for step in range(1, 60):
        seen.show_characters(step / 100, step * 8)  # 472 characters in 0.6 s
        seen.refresh()
    assert changes == ([], [])  # neither plot's axes stepped: not even a decade (5 ms gaps, a 400 ms TTFT)
    assert seen.getViewBox().viewRange()[1][1] == pytest.approx(1024, rel=0.1)  # nor the character axis
    intervals.settle()
    seen.settle()
    assert intervals.getViewBox().viewRange()[0][1] == pytest.approx(128, rel=0.05)  # fitted, as any reply's
    meter.size_for_budget(1024)  # a reply has ended: the next starts where it ended, whatever the budget
    meter.begin_reply(0, 1024)
    assert intervals.getViewBox().viewRange()[0][1] == pytest.approx(128, rel=0.05)


def _long_reply(qtbot) -> IntervalPlot:
    """Seven hundred gaps, a few a frame: many pieces of each curve, with flat stretches (bounds with no height)."""
    plot = _shown_plot(qtbot)
    qtbot.waitExposed(plot)
    gaps = [12.0 + 8.0 * math.sin(index / 9.0) if (index // 50) % 2 else 20.0 for index in range(1, 700)]
    _feed(plot, gaps, refresh_every=3)
    plot.settle()  # the ranges' last steps are drawn: the plot no longer changes under the strips
    return plot


def test_any_strip_of_a_long_reply_painted_alone_shows_what_painting_the_whole_plot_shows(qtbot):
    """A frame repaints the strip of its new points, and each curve draws only its pieces that reach into it: the
    pixels of a strip painted alone are those of a paint of the whole. (Its edge columns are left out: Qt clips a
    line at the strip's edge and may light the edge pixel, as it did before the curves were cut in pieces.)"""
    plot = _long_reply(qtbot)
    layer = plot.live_layer
    whole = layer.grab().toImage()
    width, height = layer.width(), layer.height()
    for left in range(0, width - 12, 37):
        strip = QRect(left, 0, 12, height)
        inner = QRect(2, 0, 8, height)
        assert layer.grab(strip).toImage().copy(inner) == whole.copy(inner.translated(left, 0)), strip


class _DrawnPaths:
    """A painter that keeps the paths it is asked to draw."""

    def __init__(self):
        self.paths = []

    def setPen(self, _pen) -> None:  # noqa: N802 - Qt's name
        pass

    def drawPath(self, path) -> None:  # noqa: N802 - Qt's name
        self.paths.append(path)


def test_a_strip_draws_the_pieces_of_a_curve_that_reach_into_it_and_no_others(qtbot):
    plot = _long_reply(qtbot)
    x, y = plot.interval_item.getData()
    whole = _DrawnPaths()
    plot.interval_item.paint(whole, (float(x[0]), float(y.min()), float(x[-1]), float(y.max())))
    assert len(whole.paths) >= 5  # a long curve is kept in pieces
    for low, high in ((100.5, 104.5), (300.0, 301.0), (697.0, 700.0)):
        drawn = _DrawnPaths()
        plot.interval_item.paint(drawn, (low, float(y.min()), high, float(y.max())))
        assert len(drawn.paths) <= 3
        inside = [(float(px), float(py)) for px, py in zip(x, y) if low <= px <= high]
        # Each point inside lies on a path drawn (a path's bounds hold all its points).
        for point in inside:
            assert any(
                path.boundingRect().adjusted(0, -1e-9, 0, 1e-9).contains(QPointF(*point)) for path in drawn.paths
            )
