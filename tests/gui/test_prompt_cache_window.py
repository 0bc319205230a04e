"""The prompt cache in the window, used as a teacher would: a chat whose TTFT stays flat, the cards, the waterfall
and the map showing what was reused, Ctrl+K turning it off, and the counts kept in saved chats and exports."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from core.chats.store import ChatStore

pytestmark = pytest.mark.model
REPLY_TIMEOUT_MS = 120_000


def ask(qtbot, window, text):
    window.chat_panel.settings_panel.max_new_tokens.setValue(6)
    window.chat_panel.input_box.setFocus()
    qtbot.keyClicks(window.chat_panel.input_box, text)
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS) as blocker:
        qtbot.keyClick(window.chat_panel.input_box, Qt.Key.Key_Return)
    return blocker.args[0]


def test_a_chat_reuses_its_history_and_every_view_says_so(qtbot, window, tmp_path):
    assert (
        window.chat_panel.cache_toggle.isChecked() and window.chat_panel.cache_toggle.text() == "Prompt cache (Ctrl+K)"
    )
    first = ask(qtbot, window, "Name a colour.")
    second = ask(qtbot, window, "Name another one.")
    assert second.cached_tokens > first.prompt_tokens and second.prefilled_tokens < 20

    card = window.meter.cards.cards["prompt"]
    assert card.text() == f"{second.prompt_tokens:,} tokens, {second.cached_tokens:,} cached"
    assert "the chat's history was reused from the cache" in card.toolTip()
    waterfall = window.meter.waterfall
    names = [segment.name for segment in waterfall.segments]
    assert names[:4] == ["prepare", "queue", "cache", "prefill"]
    assert waterfall.token_notes == {
        "cache": f"{second.cached_tokens:,} tokens cached",
        "prefill": f"{second.prefilled_tokens:,} tokens prefilled",
    }
    rows = window.meter.cache_map.rows
    assert [(row.prompt_tokens, row.cached_tokens) for row in rows] == [
        (first.prompt_tokens, first.cached_tokens),
        (second.prompt_tokens, second.cached_tokens),
    ]
    # The model is loaded once per test session: an earlier test's chat may have left the shared system prompt.
    assert first.cached_tokens < first.prompt_tokens
    if first.cached_tokens == 0:
        assert rows[0].caption.endswith("nothing cached yet: the first reply since the model loaded")
    else:
        assert rows[0].reason.startswith("a new chat: no history of its own to reuse yet")
    history = window.meter.history_plot
    assert list(history.prefilled_item.getData()[0]) == [first.prefilled_tokens, second.prefilled_tokens]

    qtbot.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert not window.chat_panel.cache_toggle.isChecked()
    third = ask(qtbot, window, "And a third?")
    assert third.cached_tokens == 0 and third.cache_reason.startswith("prompt cache off")
    assert window.meter.cache_map.rows[-1].caption.endswith("prompt cache off: the whole prompt was prefilled")

    window.export_traces_json(tmp_path / "chat.json")
    replies = json.loads((tmp_path / "chat.json").read_text(encoding="utf-8"))["replies"]
    assert [reply["cached_tokens"] for reply in replies] == [first.cached_tokens, second.cached_tokens, 0]
    assert replies[1]["prefilled_tokens"] == second.prefilled_tokens
    assert window.saved_chats.keeper.saver.flush(10)
    saved = ChatStore().load(window.saved_chats.current_chat_id)
    assert [reply.trace.cached_tokens for reply in saved.replies] == [first.cached_tokens, second.cached_tokens, 0]

    chat_id = window.saved_chats.current_chat_id
    window.new_chat()
    assert window.meter.cache_map.rows == []
    assert window.saved_chats.open_chat(chat_id)  # reopened: the map is drawn again from the saved traces
    assert [row.cached_tokens for row in window.meter.cache_map.rows] == [first.cached_tokens, second.cached_tokens, 0]


def test_switching_chats_in_the_window_keeps_each_chats_cache(qtbot, window):
    ask(qtbot, window, "Name a tree.")
    first_id = window.saved_chats.current_chat_id
    window.new_chat()
    other = ask(qtbot, window, "Name a flower.")
    assert other.cache_reason.startswith("a new chat: no history of its own to reuse yet")
    assert window.saved_chats.open_chat(first_id)
    back = ask(qtbot, window, "Name a bush.")
    assert back.cache_reason == "the chat's history was reused from the cache"
    assert back.prefilled_tokens < 20
