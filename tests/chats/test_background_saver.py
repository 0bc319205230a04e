"""The background chat writer: order, coalescing, deletes that win, errors reported, and a clean close."""

import threading

from core.chats.record import ChatRecord
from core.chats.saver import BackgroundSaver
from core.chats.session import Message
from core.chats.store import ChatStore


def chat_with(text: str) -> ChatRecord:
    record = ChatRecord.new()
    record.messages = [Message("user", text)]
    return record


def test_the_record_is_snapshot_at_save_time(tmp_path):
    store = ChatStore(tmp_path / "chats")
    saver = BackgroundSaver(store)
    record = chat_with("as sent")
    saver.save(record)
    record.messages[0].content = "changed later"
    record.messages.append(Message("assistant", "not yet"))
    assert saver.flush(10)
    assert store.load(record.chat_id).messages == [Message("user", "as sent")]
    assert saver.close(10) and not saver.alive


def test_queued_snapshots_of_one_chat_collapse_to_the_newest(tmp_path):
    store = ChatStore(tmp_path / "chats")
    release = threading.Event()
    original = store.write_bytes

    def slow_write(chat_id, data):
        release.wait(10)
        original(chat_id, data)

    store.write_bytes = slow_write
    saver = BackgroundSaver(store)
    blocker, record = chat_with("first in the queue"), chat_with("v0")
    saver.save(blocker)
    for version in range(1, 50):
        record.messages[0].content = f"v{version}"
        saver.save(record)
    release.set()
    assert saver.flush(10)
    assert saver.writes == 2
    assert store.load(record.chat_id).messages[0].content == "v49"
    saver.close(10)


def test_a_delete_queued_after_a_save_wins(tmp_path):
    store = ChatStore(tmp_path / "chats")
    saver = BackgroundSaver(store)
    record = chat_with("soon gone")
    saver.save(record)
    saver.delete(record.chat_id)
    assert saver.flush(10)
    assert store.scan() == []
    saver.close(10)


def test_a_failed_write_is_reported_and_the_saver_keeps_working(tmp_path):
    store = ChatStore(tmp_path / "chats")
    errors = []
    saver = BackgroundSaver(store, on_error=errors.append)
    original = store.write_bytes
    calls = []

    def flaky_write(chat_id, data):
        calls.append(chat_id)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        original(chat_id, data)

    store.write_bytes = flaky_write
    record = chat_with("kept")
    saver.save(record)
    assert saver.flush(10)
    assert errors and "Could not save the chat" in errors[0] and "No space left" in errors[0]
    saver.save(record)
    assert saver.flush(10) and store.load(record.chat_id).messages[0].content == "kept"
    saver.close(10)


def test_saves_after_close_are_written_at_once(tmp_path):
    store = ChatStore(tmp_path / "chats")
    saver = BackgroundSaver(store)
    assert saver.close(1)
    record = chat_with("late")
    saver.save(record)
    assert store.load(record.chat_id).messages[0].content == "late" and not saver.alive


def test_listing_the_chats_waits_for_a_delete_still_in_the_queue(tmp_path, qtbot):
    """The keeper lists the chats after its queued deletes land: a chat deleted a moment before is not listed again
    (the saved-chat property test met it when the saver thread ran late under load)."""
    from gui.chats.chat_keeper import ChatKeeper

    store = ChatStore(tmp_path / "chats")
    kept, deleted = chat_with("kept"), chat_with("deleted")
    for record in (kept, deleted):
        store.write_document(record.to_document())
    keeper = ChatKeeper(store)
    release = threading.Event()
    original = store.delete

    def slow_delete(chat_id):
        release.wait(10)
        original(chat_id)

    store.delete = slow_delete
    keeper.delete(deleted.chat_id)
    threading.Timer(0.2, release.set).start()  # a slow disk: the delete lands a little later
    assert [summary.chat_id for summary in keeper.scan()] == [kept.chat_id]
    assert keeper.close(10)
