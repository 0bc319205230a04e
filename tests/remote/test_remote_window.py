"""The chat window against a scripted server: connect, chat, see client and server timings, survive a cut stream."""

from __future__ import annotations

from PySide6.QtCore import Qt

from core.timing.trace import GenerationTrace
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

TIMEOUT_MS = 20_000
USAGE = {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 6},
         "timings": {"prompt_ms": 2.0, "prompt_n": 11, "predicted_ms": 10.0, "predicted_n": 6,
                     "predicted_per_token_ms": 2.0, "cache_n": 0}}


def _chunks(*texts):
    return [openai_chunk(role="assistant"), *(openai_chunk(text) for text in texts), openai_chunk(finish="stop"),
            USAGE, "[DONE]"]


def _connect(qtbot, window, url):
    with qtbot.waitSignal(window.model_changed, timeout=TIMEOUT_MS):
        window.start_loading(url, "float32")


def _ask(qtbot, window, text) -> GenerationTrace:
    window.input_box.setFocus()
    qtbot.keyClicks(window.input_box, text)
    with qtbot.waitSignal(window.reply_finished, timeout=TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


def _window(qtbot):
    from gui.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    return window


def test_the_window_chats_with_a_server_and_shows_client_and_server_timings(qtbot):
    with ScriptedServer(Script(chunks=_chunks("Hello", " from", " the", " server."), models=("m1", "m2"))) as server:
        window = _window(qtbot)
        try:
            _connect(qtbot, window, server.url)
            assert "OpenAI-compatible server" in window.model_label.text()
            # The server's other model is one pick away in the model picker.
            picker = [window.settings_panel.model_box.itemText(i) for i in range(window.settings_panel.model_box.count())]
            assert server.url + "#model=m2&protocol=openai" in picker
            trace = _ask(qtbot, window, "Hi there")
            assert trace.text == "Hello from the server."
            assert "Assistant\nHello from the server.\n" in window.transcript.toPlainText()
            assert window.meter.cards.cards["tokens"].text() == "6"  # the server's usage, not the 4 chunks
            assert trace.chunks == 4
            assert window.meter.server_view.isVisible()
            table = window.meter.server_view.text()
            assert "2.0 ms" in table and "6 in 4" in table
            # The interval plot has a point per gap between chunks: three, for four chunks of six tokens.
            assert window.meter.interval_plot.marker_count() == 3
            assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "Hi there"}
        finally:
            window.close()


def test_a_cut_stream_keeps_the_partial_reply_marked_interrupted_and_the_next_message_works(qtbot):
    with ScriptedServer(Script(chunks=_chunks("partial", " lost"), cut_after=2)) as server:
        window = _window(qtbot)
        try:
            _connect(qtbot, window, server.url)
            trace = _ask(qtbot, window, "first")
            assert trace.text == "partial" and trace.error.startswith("interrupted")
            assert window.saved_chats.records[-1].context.get("interrupted") is True
            assert [m.content for m in window.session.messages] == ["first", "partial"]
            server.script = Script(chunks=_chunks("second", " reply"))
            trace = _ask(qtbot, window, "again")
            assert trace.text == "second reply" and trace.error is None
        finally:
            window.close()


def test_a_server_that_is_not_there_is_a_clear_load_error_and_keeps_the_window_usable(qtbot):
    with ScriptedServer() as server:
        port = server.port
    window = _window(qtbot)
    try:
        with qtbot.waitSignal(window.model_failed, timeout=TIMEOUT_MS) as blocker:
            window.start_loading(f"http://127.0.0.1:{port}/v1", "float32")
        assert "connection was refused" in blocker.args[0]
        assert "connection was refused" in window.settings_panel.load_message.text()
        assert window.settings_panel.load_button.isEnabled()
    finally:
        window.close()
