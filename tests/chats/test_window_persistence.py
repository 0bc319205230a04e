"""Chats persist: saved after every turn, restored at launch, reopened, renamed, deleted, imported and exported."""

import json
import stat

import pytest
from PySide6.QtCore import Qt

from core.chats.record import ChatRecord
from core.chats.session import Message
from core.chats.store import ChatStore
from gui.chats.chat_replay import INTERRUPTED_NOTICE
from tests.support.window_driving import REPLY_TIMEOUT_MS, ask

pytestmark = pytest.mark.model


@pytest.fixture
def relaunch(open_window):
    """Open a fresh window on the same data folder, as a second launch of the app would."""
    return lambda: open_window(show=False)


def saved_chat(window) -> ChatRecord:
    assert window.saved_chats.keeper.saver.flush(10)
    return ChatStore().load(window.saved_chats.current_chat_id)


def test_every_turn_is_saved_privately_with_traces_and_settings(qtbot, window):
    first = ask(qtbot, window, "What is two plus two?", max_new_tokens=5)
    record = saved_chat(window)
    assert [m.role for m in record.messages] == ["user", "assistant"] and not record.reply_pending
    assert record.title == "What is two plus two?"
    assert record.replies[0].trace.timestamps_ns == first.timestamps_ns
    assert record.replies[0].context.settings["max_new_tokens"] == 5 and record.settings["streaming"] is True
    path = ChatStore().path_for(record.chat_id)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    ask(qtbot, window, "And three plus three?", max_new_tokens=5)
    record = saved_chat(window)
    assert len(record.messages) == 4 and len(record.replies) == 2


def test_relaunch_restores_the_list_and_reopens_the_latest_chat(qtbot, window, relaunch):
    ask(qtbot, window, "First chat question", max_new_tokens=3)
    first_id = window.saved_chats.current_chat_id
    qtbot.mouseClick(window.chat_panel.new_chat_button, Qt.MouseButton.LeftButton)
    ask(qtbot, window, "Second chat question", max_new_tokens=3)
    second_id = window.saved_chats.current_chat_id
    messages = list(window.session.messages)
    window.close()

    again = relaunch()
    assert again.saved_chats.chat_list.chat_ids() == [second_id, first_id]
    assert again.saved_chats.chat_list.titles() == ["Second chat question", "First chat question"]
    assert again.saved_chats.current_chat_id == second_id and again.session.messages == messages
    assert "Second chat question" in again.chat_panel.transcript.toPlainText()
    assert len(again.meter.history_plot.ttft_item.getData()[0]) == 1
    assert max(again.meter.visible_plot.current_item.getData()[1]) == len(messages[-1].content)
    assert again.chat_panel.regenerate_button.isEnabled()

    assert again.saved_chats.open_chat(first_id)
    assert "First chat question" in again.chat_panel.transcript.toPlainText()
    assert "Second chat question" not in again.chat_panel.transcript.toPlainText()


def test_rename_and_delete_from_the_list(qtbot, window, relaunch):
    ask(qtbot, window, "Keep me", max_new_tokens=3)
    kept_id = window.saved_chats.current_chat_id
    window.new_chat()
    ask(qtbot, window, "Delete me", max_new_tokens=3)
    doomed_id = window.saved_chats.current_chat_id

    item = window.saved_chats.chat_list.item_for(kept_id)
    item.setText("Renamed\tby the user\x00")  # what an in-place edit in the list does
    assert window.saved_chats.chat_list.item_for(kept_id).text() == "Renamed by the user"
    window.saved_chats.delete_chat(doomed_id)
    assert window.saved_chats.chat_list.chat_ids() == [kept_id] and window.session.messages == []
    assert window.saved_chats.keeper.saver.flush(10)
    window.close()

    again = relaunch()
    assert again.saved_chats.chat_list.titles() == ["Renamed by the user"]
    assert ChatStore().load(kept_id).title_is_custom


def test_a_corrupt_chat_file_is_moved_aside_with_a_visible_notice_and_the_rest_load(qtbot, relaunch):
    store = ChatStore()
    good, bad = ChatRecord.new("good"), ChatRecord.new("bad")
    for record, text in ((good, "fine"), (bad, "doomed")):
        record.messages = [Message("user", text), Message("assistant", "ok")]
        store.save(record)
    path = store.path_for(bad.chat_id)
    path.write_bytes(path.read_bytes()[:40])  # truncated

    win = relaunch()
    assert win.saved_chats.chat_list.chat_ids() == [good.chat_id] and win.saved_chats.current_chat_id == good.chat_id
    notice = win.saved_chats.chat_list.notice.text()
    assert win.saved_chats.chat_list.notice.isVisibleTo(win) and bad.chat_id in notice and "moved aside" in notice
    assert "moved aside" in win.chat_panel.transcript.toPlainText()
    assert not path.exists() and len(list((store.folder / "corrupt").iterdir())) == 1


def test_a_reply_cut_off_by_a_crash_is_marked_interrupted_and_can_be_regenerated(qtbot, relaunch, embedded_model):
    record = ChatRecord.new("crashed")
    record.messages = [Message("user", "Hello before the crash")]
    record.reply_pending = True
    ChatStore().save(record)
    win = relaunch()
    assert win.saved_chats.current_chat_id == record.chat_id
    assert INTERRUPTED_NOTICE in win.chat_panel.transcript.toPlainText()
    win.models.accept_model(embedded_model)
    win.chat_panel.settings_panel.max_new_tokens.setValue(3)
    with qtbot.waitSignal(win.reply_finished, timeout=REPLY_TIMEOUT_MS):
        qtbot.mouseClick(win.chat_panel.regenerate_button, Qt.MouseButton.LeftButton)
    assert [m.role for m in win.session.messages] == ["user", "assistant"]
    assert not saved_chat(win).reply_pending


def test_export_and_import_through_the_window(qtbot, window, tmp_path):
    ask(qtbot, window, "Export this chat", max_new_tokens=3)
    exported = tmp_path / "chat.json"
    window.saved_chats.export_chat(exported)
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert document["messages"][0]["content"] == "Export this chat"
    assert str(tmp_path) not in exported.read_text(encoding="utf-8")
    assert window.saved_chats.import_chat(exported)
    assert (
        len(window.saved_chats.chat_list.chat_ids()) == 2 and window.session.messages[0].content == "Export this chat"
    )

    not_a_chat = tmp_path / "other.json"
    not_a_chat.write_text('{"hello": "world"}', encoding="utf-8")
    assert not window.saved_chats.import_chat(not_a_chat)
    assert "Import refused: other.json is not a chat" in window.chat_panel.transcript.toPlainText()
    assert len(window.saved_chats.chat_list.chat_ids()) == 2


def test_an_imported_chat_with_invalid_settings_opens_with_those_settings_refused(qtbot, window, tmp_path):
    record = ChatRecord.new("odd settings")
    record.messages = [Message("user", "hi"), Message("assistant", "hello")]
    record.settings = {"max_new_tokens": 10**9, "temperature": 9.0, "top_p": 0.5}
    path = tmp_path / "odd.json"
    ChatStore(tmp_path / "elsewhere").export_chat(record, path)
    window.chat_panel.settings_panel.temperature.setValue(0.7)
    assert window.saved_chats.import_chat(path)
    text = window.chat_panel.transcript.toPlainText()
    assert "This chat's setting was refused: max new tokens must be a whole number" in text
    assert "temperature must be a number from 0 to 2; got 9.0" in text
    assert window.chat_panel.settings_panel.temperature.value() == pytest.approx(0.7)
    assert window.chat_panel.settings_panel.top_p.value() == pytest.approx(0.5)


def test_opening_another_chat_mid_reply_is_refused(qtbot, window):
    ask(qtbot, window, "An earlier chat", max_new_tokens=3)
    earlier = window.saved_chats.current_chat_id
    window.new_chat()
    window.chat_panel.settings_panel.max_new_tokens.setValue(300)
    window.chat_panel.input_box.setPlainText("Tell me a long story.")
    with qtbot.waitSignal(window.replies.token_received, timeout=REPLY_TIMEOUT_MS):
        window.send_message()
    assert not window.saved_chats.open_chat(earlier)
    assert "Stop the reply before opening another chat." in window.statusBar().currentMessage()
    with qtbot.waitSignal(window.reply_finished, timeout=REPLY_TIMEOUT_MS):
        window.stop_generation()
    assert window.saved_chats.open_chat(earlier)


def test_a_failed_save_is_shown_and_retried_on_the_next_turn(qtbot, window):
    store = window.saved_chats.keeper.store
    original = store.write_bytes
    failures = []

    def full_disk(chat_id, data):
        failures.append(chat_id)
        raise OSError(28, "No space left on device")

    store.write_bytes = full_disk
    ask(qtbot, window, "Will this be saved?", max_new_tokens=3)
    window.saved_chats.keeper.saver.flush(10)
    qtbot.waitUntil(lambda: "Could not save the chat" in window.chat_panel.transcript.toPlainText(), timeout=5_000)
    assert failures and "No space left on device" in window.chat_panel.transcript.toPlainText()
    store.write_bytes = original
    ask(qtbot, window, "And now?", max_new_tokens=3)
    assert len(saved_chat(window).messages) == 4


def test_viewing_chats_does_not_reorder_the_list(qtbot, window):
    ask(qtbot, window, "Older chat", max_new_tokens=3)
    older = window.saved_chats.current_chat_id
    window.new_chat()
    ask(qtbot, window, "Newer chat", max_new_tokens=3)
    newer = window.saved_chats.current_chat_id
    assert window.saved_chats.chat_list.chat_ids() == [newer, older]
    window.saved_chats.open_chat(older)
    window.saved_chats.open_chat(newer)
    window.saved_chats.open_chat(older)
    assert window.saved_chats.chat_list.chat_ids() == [newer, older]
    assert window.saved_chats.keeper.saver.flush(10)
    assert [s.chat_id for s in ChatStore().scan()] == [newer, older]


def test_a_chat_saved_with_the_reply_regenerate_replaced_reopens_with_the_new_one(qtbot, window, relaunch):
    """Older builds kept the replaced reply in the chat's file: reopened, it came back into the budget tally, the
    history and the prompt-cache map (2 of 2 replies for a chat showing one). The newest reply of a message wins."""
    ask(qtbot, window, "Say hi.", max_new_tokens=6)
    record = saved_chat(window)
    replaced = record.replies[0]
    window.close()
    record.replies = [replaced, *record.replies]  # what an older build saved after Regenerate
    store = ChatStore()
    store.write_bytes(record.chat_id, store.encode(record))
    assert len(store.load(record.chat_id).replies) == 2
    reopened = relaunch()
    assert reopened.saved_chats.open_chat(record.chat_id)
    assert len(reopened.saved_chats.records) == 1
    assert reopened.meter.budget_line.tally.endswith("of 1 reply within budget")
    assert len(reopened.meter.cache_map.rows) == 1


def test_a_system_prompt_typed_after_the_last_message_survives_a_relaunch(qtbot, window, relaunch):
    """The reopened chat put back the system prompt of its last send: what the user typed since was gone."""
    ask(qtbot, window, "Say hi.", max_new_tokens=4)
    window.chat_panel.settings_panel.system_prompt.setPlainText("You are terse.")
    window.close()
    reopened = relaunch()
    assert reopened.chat_panel.settings_panel.system_prompt.toPlainText() == "You are terse."
    assert reopened.session.system_prompt == "You are terse."


def test_a_huge_chat_reopens_drawing_its_newest_messages_and_keeps_them_all(qtbot, window, relaunch, monkeypatch):
    """A 70 MB chat of 800 messages took 25 s to draw: a relaunch left the window black for a minute. Its newest
    messages are drawn, up to a bound, with a line saying what was left out; the chat itself keeps every message."""
    import gui.chats.chat_replay

    monkeypatch.setattr(gui.chats.chat_replay, "DRAWN_CHARS", 3_000)
    ask(qtbot, window, "Say hi.", max_new_tokens=4)
    record = saved_chat(window)
    window.close()
    record.messages = [
        Message("user" if index % 2 == 0 else "assistant", f"message {index} " + "x" * 990) for index in range(10)
    ] + record.messages
    record.replies = []
    store = ChatStore()
    store.write_bytes(record.chat_id, store.encode(record))
    reopened = relaunch()
    assert reopened.saved_chats.open_chat(record.chat_id)
    shown = reopened.chat_panel.transcript.toPlainText()
    assert "The chat's first 8 messages (8,000 characters) are not drawn here" in shown
    assert "message 8 " in shown and "message 7 " not in shown and "Say hi." in shown
    assert len(reopened.session.messages) == 12  # all of them are still the chat's, sent as its context allows
