"""Every per-token update the window makes runs on the GUI thread, never on the worker's."""

import threading

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.model


def test_token_slots_run_on_the_gui_thread(qtbot, window):
    threads = []
    record_token = window.meter.record_token

    def recording(event):
        threads.append(threading.current_thread() is threading.main_thread())
        record_token(event)

    window.meter.record_token = recording
    window.chat_panel.settings_panel.max_new_tokens.setValue(12)
    qtbot.keyClicks(window.chat_panel.input_box, "Count to five.")
    with qtbot.waitSignal(window.reply_finished, timeout=120_000) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    assert len(threads) == blocker.args[0].output_tokens >= 2
    assert all(threads)


def test_the_window_has_a_lab_tab_on_the_windows_engine_which_ends_with_the_window(qtbot, window):
    labels = [window.tabs.tabText(index) for index in range(window.tabs.count())]
    assert labels == ["Chat", "Lab", "Traffic"]
    assert window.lab_tab.client is window.models.client and window.models.engine.alive
    window.close()
    assert not window.models.engine.alive
