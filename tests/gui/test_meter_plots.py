"""The interval plot's axis labels and markers, without a model: points fed straight in."""

import math

import pytest

from gui.meter.interval_plot import IntervalPlot, decade_label


def test_decades_are_labelled_in_human_units():
    assert [decade_label(power) for power in (-1, 0, 1, 2, 3, 4)] == ["100 µs", "1 ms", "10 ms", "100 ms",
                                                                      "1 s", "10 s"]


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
    assert list(x) == [1, 2, 3, 4] and [10 ** value for value in y] == pytest.approx(gaps)
    # Four segment pairs (a '+') per gap.
    assert plot.marker_item.item.path().elementCount() == 4 * len(gaps)
