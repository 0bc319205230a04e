"""The 'interrupted' mark on a message whose reply was cut off stays until that message is answered or deleted."""

from core.chats.record import ChatRecord, ReplyRecord
from core.chats.reply_context import ReplyContext
from core.chats.session import ChatSession, Message
from core.chats.store import ChatStore
from core.timing.trace import ReplyTrace
from gui.chats.chat_keeper import ChatKeeper


def test_a_plain_reopen_and_close_keeps_the_mark_until_the_message_is_answered(qtbot, tmp_path):
    store = ChatStore(tmp_path / "chats")
    interrupted = ChatRecord.new()
    interrupted.messages = [Message("user", "first"), Message("assistant", "reply"), Message("user", "cut off")]
    interrupted.reply_pending = True  # saved while its reply ran, then the app was killed
    store.save(interrupted)

    keeper = ChatKeeper(store)
    record = keeper.open(interrupted.chat_id)
    session = ChatSession(messages=list(record.messages))
    # Relaunch, look, close: the window saves with no reply running.
    assert keeper.capture(session, [], {}, None, generating=False).reply_pending
    keeper.save_current()
    assert keeper.saver.flush(10)
    assert store.load(interrupted.chat_id).reply_pending  # still marked after one plain relaunch and close

    # Regenerate answers it: the mark goes.
    session.add_assistant("the answer")
    answered = ReplyRecord(ReplyTrace(0, 3), ReplyContext(after_message=2, message_index=3))
    assert not keeper.capture(session, [answered], {}, None, generating=False).reply_pending
    keeper.close(5)
