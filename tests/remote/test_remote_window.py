"""The chat window against a scripted server: connect, chat, see client and server timings, survive a cut stream."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt

from core.timing.trace import ReplyTrace
from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk

TIMEOUT_MS = 20_000
USAGE = {
    "choices": [],
    "usage": {"prompt_tokens": 11, "completion_tokens": 6},
    "timings": {
        "prompt_ms": 2.0,
        "prompt_n": 11,
        "predicted_ms": 10.0,
        "predicted_n": 6,
        "predicted_per_token_ms": 2.0,
        "cache_n": 0,
    },
}


def _chunks(*texts):
    return [
        openai_chunk(role="assistant"),
        *(openai_chunk(text) for text in texts),
        openai_chunk(finish="stop"),
        USAGE,
        "[DONE]",
    ]


def _connect(qtbot, window, url):
    """As a user does: the URL typed into the model picker, then Load."""
    window.chat_panel.settings_panel.model_box.setCurrentText(url)
    with qtbot.waitSignal(window.model_ready, timeout=TIMEOUT_MS):
        qtbot.mouseClick(window.chat_panel.settings_panel.load_button, Qt.MouseButton.LeftButton)


def _ask(qtbot, window, text) -> ReplyTrace:
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, text)
    with qtbot.waitSignal(window.reply_finished, timeout=TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


def test_the_window_chats_with_a_server_and_shows_client_and_server_timings(qtbot, open_window):
    with ScriptedServer(Script(chunks=_chunks("Hello", " from", " the", " server."), models=("m1", "m2"))) as server:
        window = open_window()
        try:
            _connect(qtbot, window, server.url)
            assert "OpenAI-compatible server" in window.model_label.text()
            # The server's other model is one pick away in the model picker.
            picker = [
                window.chat_panel.settings_panel.model_box.itemText(i)
                for i in range(window.chat_panel.settings_panel.model_box.count())
            ]
            assert server.url + "#model=m2&protocol=openai" in picker
            trace = _ask(qtbot, window, "Hi there")
            assert trace.text == "Hello from the server."
            assert "Assistant\nHello from the server.\n" in window.chat_panel.transcript.toPlainText()
            assert window.meter.cards.cards["tokens"].text() == "6"  # the server's usage, not the 4 chunks
            assert trace.chunks == 4
            window.meter.views.show_view(window.meter.server_view)  # its tab, "Where the time went"
            assert window.meter.server_view.isVisible()
            table = window.meter.server_view.text()
            assert "2.0 ms" in table and "6 in 4" in table
            # The interval plot has a point per gap between chunks: three, for four chunks of six tokens.
            assert window.meter.interval_plot.marker_count() == 3
            assert server.requests[-1]["body"]["messages"][-1] == {"role": "user", "content": "Hi there"}
        finally:
            window.close()


def test_a_cut_stream_keeps_the_partial_reply_marked_interrupted_and_the_next_message_works(qtbot, open_window):
    with ScriptedServer(Script(chunks=_chunks("partial", " lost"), cut_after=2)) as server:
        window = open_window()
        try:
            _connect(qtbot, window, server.url)
            trace = _ask(qtbot, window, "first")
            assert trace.text == "partial" and trace.error.startswith("interrupted")
            assert window.saved_chats.records[-1].context.interrupted is True
            assert [m.content for m in window.session.messages] == ["first", "partial"]
            server.script = Script(chunks=_chunks("second", " reply"))
            trace = _ask(qtbot, window, "again")
            assert trace.text == "second reply" and trace.error is None
        finally:
            window.close()


def test_a_server_that_is_not_there_is_a_clear_load_error_and_keeps_the_window_usable(qtbot, open_window):
    with ScriptedServer() as server:
        port = server.port
    window = open_window()
    try:
        with qtbot.waitSignal(window.model_failed, timeout=TIMEOUT_MS) as blocker:
            window.start_loading(f"http://127.0.0.1:{port}/v1", "float32")
        assert "connection was refused" in blocker.args[0]
        assert "connection was refused" in window.chat_panel.settings_panel.load_message.text()
        assert window.chat_panel.settings_panel.load_button.isEnabled()
    finally:
        window.close()


@pytest.mark.engine_process
def test_the_engine_process_carries_a_remote_reply_and_the_key_never_reaches_the_saved_settings(qtbot, open_window):
    from pathlib import Path

    from gui.settings.store import open_settings

    with ScriptedServer(Script(chunks=_chunks("Over", " the", " pipe."))) as server:
        window = open_window()
        try:
            window.chat_panel.settings_panel.server_key = "sk-window-key-42"
            _connect(qtbot, window, server.url)
            trace = _ask(qtbot, window, "Hi")
            assert trace.text == "Over the pipe." and trace.output_tokens == 6
            assert server.requests[-1]["headers"]["Authorization"] == "Bearer sk-window-key-42"
        finally:
            window.close()
    store = open_settings()
    store.sync()
    saved = Path(store.fileName()).read_text(encoding="utf-8", errors="replace")
    assert "sk-window-key-42" not in saved and server.url in saved  # the URL is kept, the key is not
    chats = [
        path.read_text(errors="replace") for path in Path(os.environ["XDG_DATA_HOME"]).rglob("*") if path.is_file()
    ]
    assert chats and not any("sk-window-key-42" in text for text in chats)


def test_the_server_dialog_builds_the_spec_and_refuses_a_key_in_the_url(qtbot):
    from gui.model.server_dialog import ServerDialog

    dialog = ServerDialog()
    qtbot.addWidget(dialog)
    dialog.url.setText("http://127.0.0.1:11434")
    dialog.protocol.setCurrentText("ollama")
    dialog.served_model.setText("llama3.2:1b")
    dialog.key.setText("secret")
    dialog.accept()
    assert dialog.result() == dialog.DialogCode.Accepted
    assert dialog.spec_text() == "http://127.0.0.1:11434#model=llama3.2%3A1b&protocol=ollama"
    assert dialog.api_key() == "secret"
    refusing = ServerDialog()
    qtbot.addWidget(refusing)
    refusing.url.setText("https://example.invalid/v1?api_key=abc")
    refusing.accept()
    assert refusing.result() != refusing.DialogCode.Accepted
    assert "key in its query" in refusing.problem.text()


def test_reasoning_is_shown_apart_from_the_answer(qtbot, open_window):
    chunks = [
        openai_chunk(role="assistant"),
        openai_chunk(reasoning="Think first."),
        openai_chunk("Answer."),
        openai_chunk(finish="stop"),
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        window = open_window()
        try:
            _connect(qtbot, window, server.url)
            trace = _ask(qtbot, window, "Why?")
            assert trace.text == "Answer." and trace.reasoning_text == "Think first."
            shown = window.chat_panel.transcript.toPlainText()
            assert "Assistant\nAnswer.\n[reasoning] Think first." in shown
            assert window.session.messages[-1].content == "Answer."
        finally:
            window.close()


def test_the_lab_tab_runs_its_sweeps_against_a_server(qtbot, open_window):
    chunks = [
        openai_chunk(role="assistant"),
        *(openai_chunk(f" w{i}") for i in range(4)),
        openai_chunk(finish="length"),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
        "[DONE]",
    ]
    with ScriptedServer(Script(chunks=chunks)) as server:
        window = open_window()
        try:
            form = window.lab_tab.form
            form.model_box.setCurrentText(server.url)
            for name, box in form.sweep_boxes.items():
                box.setChecked(name in ("prompt", "batch", "precision"))
            form.prompt_words_edit.setText("5, 10")
            form.new_tokens_spin.setValue(4)
            form.repeats_spin.setValue(1)
            form.batch_sizes_edit.setText("1, 2")
            with qtbot.waitSignal(window.lab_tab.run_finished, timeout=TIMEOUT_MS) as blocker:
                window.lab_tab.run()
            results = blocker.args[0]
            assert results is not None and results.error is None
            assert len(results.prompt) == 2 and [row["concurrency"] for row in results.batch] == [1, 2]
            assert any("does not apply" in note for note in results.notes)
        finally:
            window.close()
