"""Every reply in the window gets a waterfall: where its TTFT went, its stop, and the same in the export."""

import json
import threading

import pytest
from PySide6.QtCore import Qt

from core.timing.waterfall import BEFORE_FIRST_TOKEN

REPLY_TIMEOUT_MS = 120_000

pytestmark = pytest.mark.model


def test_a_real_reply_s_waterfall_adds_up_to_its_ttft_and_is_exported(qtbot, window, tmp_path):
    window.chat_panel.settings_panel.max_new_tokens.setValue(6)
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, "Say yes.")
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    trace = finished.args[0]
    waterfall = window.meter.waterfall
    qtbot.waitUntil(lambda: "paint" in [segment.name for segment in waterfall.segments], timeout=REPLY_TIMEOUT_MS)
    names = [segment.name for segment in waterfall.segments]
    assert names == [*BEFORE_FIRST_TOKEN, "delivery", "paint"]
    before = waterfall.segments[:4]  # template + tokenise, wait for compute, prompt cache, prefill
    assert sum(segment.duration_s for segment in before) == pytest.approx(trace.metrics().ttft_s, abs=1e-9)
    assert all(segment.duration_s >= 0 for segment in waterfall.segments)
    assert "TTFT" in waterfall.tooltip_for(before[-1]) and "ms" in waterfall.summary_text()
    # Narrower than its summary (the meter at a 1,259-pixel window), the line is cut with '…', E2E kept whole.
    waterfall.resize(300, waterfall.height())
    shown = waterfall.shown_summary()
    assert shown.startswith(f"E2E {trace.metrics().e2e_s * 1000:.1f} ms · ") and shown.endswith("…")
    assert waterfall.fontMetrics().horizontalAdvance(shown) <= waterfall.width() - 8
    window.export_traces_json(tmp_path / "t.json")
    document = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    exported = document["replies"][0]["waterfall"]
    assert [segment["name"] for segment in exported["segments"]][:4] == list(BEFORE_FIRST_TOKEN)
    assert exported["segments"][3]["end_s"] == pytest.approx(trace.metrics().ttft_s)
    assert "compute thread" in document["definitions"]["waterfall.queue"]


def test_a_stop_during_decode_shows_the_cancel_segment(qtbot, window):
    window.chat_panel.settings_panel.max_new_tokens.setValue(200)
    window.chat_panel.input_box.setPlainText("Count slowly from one to one hundred.")
    pressed = threading.Event()

    def press_stop(_token) -> None:
        if not pressed.is_set():
            pressed.set()
            window.stop_generation()

    window.replies.token_received.connect(press_stop)
    try:
        with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as finished:
            window.send_message()
    finally:
        window.replies.token_received.disconnect(press_stop)
    trace = finished.args[0]
    assert trace.stop_reason == "stopped"
    cancel = {segment.name: segment for segment in window.meter.waterfall.segments}["cancel"]
    assert cancel.duration_s >= 0 and "Stop" in window.meter.waterfall.tooltip_for(cancel)
