"""Plots on pages that scroll leave the wheel to the page; Ctrl+wheel zooms them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent

from gui.lab.batch_plot import BatchPlot
from gui.lab.history_plot import HistorySweepPlot
from gui.lab.precision_plot import PrecisionPlot
from gui.lab.prompt_plot import PromptLengthPlot
from gui.lab.roofline_plot import RooflinePlot
from gui.meter.history_plot import HistoryPlot
from gui.meter.interval_plot import IntervalPlot
from gui.meter.visible_text_plot import VisibleTextPlot
from gui.traffic.timeline_plot import TimelinePlot


def _wheel(plot, modifiers) -> QWheelEvent:
    middle = QPointF(plot.viewport().rect().center())
    event = QWheelEvent(
        middle,
        QPointF(plot.viewport().mapToGlobal(middle.toPoint())),
        QPoint(0, 0),
        QPoint(0, -120),
        Qt.MouseButton.NoButton,
        modifiers,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    plot.wheelEvent(event)
    return event


LIVE = [IntervalPlot, VisibleTextPlot, HistoryPlot, TimelinePlot]
LAB = [PromptLengthPlot, BatchPlot, PrecisionPlot, RooflinePlot, HistorySweepPlot]


@pytest.mark.parametrize("kind", LIVE + LAB)
def test_the_wheel_goes_to_the_page_and_ctrl_wheel_zooms(qtbot, kind):
    """The Lab's plots fill most of its page: the wheel zoomed the one under the pointer (axes of 10⁻¹⁷, labels on
    top of each other) instead of scrolling down. The meter scrolls too on a short screen, and a live plot kept the
    zoom, as its frames change the ranges only when the data outgrows them. A plot ignores the plain wheel, which Qt
    then hands to the scroll area around it (only a real device's wheel goes on: not sent here)."""
    plot = kind()
    qtbot.addWidget(plot)
    plot.resize(400, 250)
    plot.show()
    before = plot.getViewBox().viewRange()
    assert not _wheel(plot, Qt.KeyboardModifier.NoModifier).isAccepted()
    assert plot.getViewBox().viewRange() == before
    _wheel(plot, Qt.KeyboardModifier.ControlModifier)
    assert plot.getViewBox().viewRange() != before
