"""Bad input in the window, on the real model: each case gets a clear message, nothing is lost, nothing freezes."""

import dataclasses
import json
import re
import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence

import core.generation.request
from core.chats.store import ChatStore
from tests.support.window_driving import REPLY_TIMEOUT_MS, StallProbe, ask

pytestmark = pytest.mark.model

ONE_MB_OF_PROSE = ("Latency is the time between asking and seeing. " * 25_000)[:1_000_000]
# The message box turns \r, \r\n, U+2028 and U+2029 into \n, like any Qt text field; everything else is kept.
HOSTILE_TEXT = (
    "NUL\x00 BEL\x07 ESC\x1b[31m DEL\x7f ZWJ 👩‍💻 skin 👋🏽 math 𝕏 RLO\u202eevil\u202c "
    "BOM\ufeff Hebrew שלום עולם Arabic مرحبا بالعالم CJK 漢字 tab\tend\nline two\n" + "word" * 2_500
)  # and a 10,000-character line


def refusal(window) -> str:
    return window.chat_panel.transcript.toPlainText().split("Message refused: ")[-1]


def test_empty_and_whitespace_only_messages_are_ignored(qtbot, window):
    for text in ("", "   ", "\n\n\t  \n", "\u3000\u00a0"):
        window.chat_panel.input_box.setPlainText(text)
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
        qtbot.mouseClick(window.chat_panel.send_button, Qt.MouseButton.LeftButton)
        assert not window.generating
    assert window.session.messages == [] and window.chat_panel.transcript.toPlainText() == ""
    window.saved_chats.keeper.saver.flush(5)
    assert ChatStore().scan() == []


def paste_a_megabyte_and_send(qtbot, window):
    """(what reply_finished carried, the longest event-loop freeze in seconds)."""
    window.chat_panel.settings_panel.max_new_tokens.setValue(4)
    qtbot.keyClicks(window.chat_panel.input_box, "Please read: ")
    QGuiApplication.clipboard().setText(ONE_MB_OF_PROSE)
    with StallProbe() as probe:
        qtbot.keySequence(window.chat_panel.input_box, QKeySequence.StandardKey.Paste)
        with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
            qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
        qtbot.wait(50)
    return blocker.args[0], probe.max_stall_s


@pytest.mark.timing
def test_a_1mb_paste_and_send_never_freeze_the_window_for_250ms(qtbot, window):
    assert paste_a_megabyte_and_send(qtbot, window)[1] < 0.250


def test_a_1mb_paste_is_refused_with_token_count_and_limit(qtbot, window):
    # The million characters are tokenised in the engine (here in-process, on its job thread), never on
    # the GUI thread.
    seen_threads = []
    original = core.generation.request.prepare_reply

    def recording_prepare(*args, **kwargs):
        seen_threads.append(threading.current_thread() is threading.main_thread())
        return original(*args, **kwargs)

    core.generation.request.prepare_reply = recording_prepare
    try:
        finished, _ = paste_a_megabyte_and_send(qtbot, window)
    finally:
        core.generation.request.prepare_reply = original
    assert seen_threads == [False]
    assert finished is None
    message = refusal(window)
    needed, limit = (
        int(n.replace(",", "")) for n in re.search(r"needs ([\d,]+) prompt tokens.* only ([\d,]+)", message).groups()
    )
    assert needed > 100_000 and limit == 8192 - 4
    assert window.statusBar().currentMessage().startswith("Message refused")
    # Nothing lost: the paste is still in the box, not in the chat.
    assert window.chat_panel.input_box.message_text() == "Please read: " + ONE_MB_OF_PROSE
    assert window.session.messages == [] and not window.chat_panel.input_box.isReadOnly()
    window.chat_panel.input_box.clear()
    assert ask(qtbot, window, "Say hi.", max_new_tokens=3).output_tokens >= 1


def test_a_single_message_longer_than_the_window_is_refused(qtbot, window):
    window.chat_panel.settings_panel.max_new_tokens.setValue(8)
    text = "alpha beta gamma delta epsilon " * 2_000  # 62 kB typed (not pasted): about 10k tokens
    assert ask(qtbot, window, text, max_new_tokens=8) is None
    assert "prompt tokens" in refusal(window) and "8,184" in refusal(window)
    assert window.chat_panel.input_box.message_text() == text and window.session.messages == []


def test_over_long_history_drops_the_oldest_turns_with_a_notice(qtbot, window, embedded_model):
    window.models.accept_model(dataclasses.replace(embedded_model, context_window=400))
    for turn in range(6):
        window.session.add_user(f"Question {turn}: " + "tell me more about the sea " * 8)
        window.session.add_assistant(f"Answer {turn}: " + "the sea is wide and deep " * 8)
    trace = ask(qtbot, window, "And the newest question?", max_new_tokens=4)
    assert trace is not None and trace.prompt_tokens <= 400 - 4
    shown = window.chat_panel.transcript.toPlainText()
    assert "The chat no longer fits the model's context window: the oldest" in shown
    assert "were left out of this prompt" in shown
    assert len(window.session.messages) == 14  # the transcript and history keep every turn


def test_a_reply_budget_as_large_as_the_context_is_refused(qtbot, window):
    assert ask(qtbot, window, "Hello", max_new_tokens=8192) is None
    assert "max new tokens is 8,192" in refusal(window) and "context window holds only 8,192" in refusal(window)
    assert window.chat_panel.input_box.message_text() == "Hello"


def test_invalid_saved_settings_are_refused_with_a_message(open_window):
    from gui.settings.store import open_settings

    store = open_settings()
    for key, value in (("max_new_tokens", -3), ("temperature", 5.0), ("top_p", 0.0), ("dtype", "float7")):
        store.setValue(key, value)
    store.sync()
    win = open_window(show=False)
    text = win.chat_panel.transcript.toPlainText()
    assert "max new tokens must be a whole number from 1" in text and "got -3" in text
    assert "temperature must be a number from 0 to 2; got 5.0" in text
    assert "top-p must be a number above 0 and at most 1; got 0.0" in text
    assert "dtype must be one of: native, float32, bfloat16, int8, int4; got 'float7'" in text
    panel = win.chat_panel.settings_panel
    values = (panel.max_new_tokens.value(), panel.temperature.value(), panel.top_p.value(), panel.dtype())
    assert values == (256, 0.0, 1.0, "native")  # the defaults, native precision among them


def test_hostile_text_round_trips_through_history_saving_and_export(qtbot, window, tmp_path):
    trace = ask(qtbot, window, HOSTILE_TEXT, max_new_tokens=2)
    assert trace is not None and trace.error is None
    assert window.session.messages[0].content == HOSTILE_TEXT
    shown = window.chat_panel.transcript.toPlainText()
    assert "שלום עולם" in shown and "مرحبا بالعالم" in shown and "👩‍💻" in shown and "𝕏" in shown
    assert window.saved_chats.keeper.saver.flush(10)
    saved = ChatStore().load(window.saved_chats.current_chat_id)
    assert saved.messages == window.session.messages
    assert saved.replies[0].trace.token_ids == trace.token_ids
    window.saved_chats.export_chat(tmp_path / "chat.json")
    exported = json.loads((tmp_path / "chat.json").read_text(encoding="utf-8"))
    assert exported["messages"][0]["content"] == HOSTILE_TEXT
    window.copy_reply(0)
    assert QGuiApplication.clipboard().text() == HOSTILE_TEXT
