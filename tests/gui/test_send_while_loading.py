"""A message sent while the model is still loading is kept and sent once the model is ready."""

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.model


def test_enter_during_loading_sends_when_the_model_is_ready(qtbot, open_window, embedded_model):
    window = open_window()
    window.chat_panel.settings_panel.max_new_tokens.setValue(4)
    try:
        with qtbot.waitSignal(window.reply_finished, timeout=120_000) as blocker:
            window.start_loading("embedded", "float32")
            qtbot.keyClicks(window.chat_panel.input_box, "Hello!")
            qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
            assert window.ready is None and window.chat_panel.input_box.toPlainText() == "Hello!"
            assert "still loading" in window.statusBar().currentMessage()
        assert blocker.args[0].output_tokens >= 1
        assert "still loading" not in window.statusBar().currentMessage()
        assert window.session.messages[0].content == "Hello!" and window.chat_panel.input_box.toPlainText() == ""
    finally:
        window.close()
    assert not window.models.engine.alive
