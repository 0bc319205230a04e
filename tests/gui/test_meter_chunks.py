"""The meter's interval plot over a network: a point per gap between chunks, none for chunks read together."""

from __future__ import annotations

from core.timing.events import TokenEvent
from gui.meter.meter_panel import MeterPanel


def test_chunks_read_together_add_no_point_and_the_gap_after_them_is_one(qtbot):
    """Two server messages in one read share their arrival stamp: the plot drew a 1 µs gap between them, which
    stretched its log axis six decades down."""
    meter = MeterPanel()
    qtbot.addWidget(meter)
    meter.begin_reply(0)
    arrivals_ms = [(0, 40.0), (1, 50.0), (2, 50.0), (3, 60.0), (3, 60.0)]  # (chunk, arrival): 2 read with 1
    for index, (chunk, arrival_ms) in enumerate(arrivals_ms):
        meter.record_token(TokenEvent(index, -1, "x", round(arrival_ms * 1e6), chunk=chunk))
    meter.refresh()
    assert meter.interval_plot.marker_count() == 2  # 40 -> 50 and 50 -> 60 ms: the gaps a user waited
    _, log_y = meter.interval_plot.marker_item.getData()
    assert [round(10**value, 6) for value in log_y] == [10.0, 10.0]
