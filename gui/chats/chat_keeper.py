"""The window's link to saved chats: which chat is open, saving it in the background, and the list of chats."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from core.chats.record import ChatRecord, ReplyRecord, clean_title, default_title, utc_now
from core.chats.saver import BackgroundSaver
from core.chats.session import ChatSession, Message
from core.chats.store import ChatStore, ChatSummary


class ChatKeeper(QObject):
    """Lives on the GUI thread. save_failed is emitted from the saver thread and arrives queued."""

    save_failed = Signal(str)

    def __init__(self, store: ChatStore | None = None, parent=None):
        super().__init__(parent)
        self.store = store or ChatStore()
        self.saver = BackgroundSaver(self.store, on_error=self._on_write_error)
        self.current = ChatRecord.new()
        self.summaries: dict[str, ChatSummary] = {}
        self._last_written: tuple | None = None  # the change key of what was last queued (ChatRecord.change_key)

    def _on_write_error(self, message: str) -> None:
        """On the saver thread: forget what was written, so the next save of the same content retries."""
        self._last_written = None
        self.save_failed.emit(message)

    # -- the list -------------------------------------------------------------------------------

    def scan(self) -> list[ChatSummary]:
        self.saver.flush()  # queued writes and deletes land first: a chat deleted a moment ago is not listed again
        self.summaries = {summary.chat_id: summary for summary in self.store.scan()}
        return self.ordered_summaries()

    def ordered_summaries(self) -> list[ChatSummary]:
        return sorted(self.summaries.values(), key=lambda s: (s.updated_at, s.chat_id), reverse=True)

    def take_notices(self) -> list[str]:
        notices, self.store.notices = list(self.store.notices), []
        return notices

    # -- the open chat --------------------------------------------------------------------------

    def capture(
        self, session: ChatSession, records: Sequence[ReplyRecord], settings: dict, model: str | None, generating: bool
    ) -> ChatRecord:
        """A record of the open chat as it stands. A reply still being generated has no record yet.

        The 'interrupted' mark (reply_pending) is set while a reply runs, and it stays after a relaunch
        until the last message is answered or the chat deleted: one plain reopen and close keep it.
        """
        chat = self.current
        if not chat.title_is_custom:
            first_user = next((m.content for m in session.messages if m.role == "user"), "")
            chat.title = default_title(first_user)
        chat.system_prompt = session.system_prompt
        chat.settings = dict(settings)
        chat.model = model or chat.model
        chat.messages = [Message(m.role, m.content) for m in session.messages]
        chat.replies = [ReplyRecord(record.trace, record.context) for record in records]
        last_user = len(session.messages) - 1 if session.messages and session.messages[-1].role == "user" else None
        answered = any(record.context.after_message == last_user for record in records)
        chat.reply_pending = generating or (chat.reply_pending and last_user is not None and not answered)
        return chat

    def save_current(self) -> None:
        """Queue a write of the open chat when it changed; an empty chat is not worth a file.

        An unchanged chat is not rewritten, so merely viewing a chat never moves it up the list.
        """
        chat = self.current
        if not chat.messages:
            return
        # O(messages) with shared strings, never a whole document: a 50 MB chat froze the window 3.1 s a save.
        content = chat.change_key()
        if self._last_written == content:
            return
        self._last_written = content
        chat.updated_at = utc_now()
        self.summaries[chat.chat_id] = ChatSummary(chat.chat_id, chat.title, chat.updated_at, len(chat.messages))
        self.saver.save(chat)

    def start_new(self) -> None:
        self.current = ChatRecord.new()

    def open(self, chat_id: str) -> ChatRecord:
        """Raise ChatFileError (the file then moved aside and dropped from the list) when it cannot be read."""
        self.saver.flush()  # a queued write of that chat must land before it is read back
        try:
            record = self.store.load(chat_id)
        except Exception:
            self.summaries.pop(chat_id, None)
            raise
        self.current = record
        self._last_written = record.change_key()
        return record

    def rename(self, chat_id: str, title: str) -> None:
        if chat_id == self.current.chat_id:
            self.current.title = clean_title(title)
            self.current.title_is_custom = True
            self.save_current()
            return
        self.saver.flush()
        record = self.store.rename(chat_id, title)
        self.summaries[chat_id] = ChatSummary(chat_id, record.title, record.updated_at, len(record.messages))

    def delete(self, chat_id: str) -> None:
        self.summaries.pop(chat_id, None)
        self.saver.delete(chat_id)

    def export(self, chat_id: str, destination: Path) -> None:
        self.saver.flush()
        record = self.current if chat_id == self.current.chat_id else self.store.load(chat_id)
        self.store.export_chat(record, destination)

    def import_file(self, source: Path) -> ChatRecord:
        record = self.store.import_chat(source)
        self.summaries[record.chat_id] = ChatSummary(
            record.chat_id, record.title, record.updated_at, len(record.messages)
        )
        return record

    def close(self, timeout_s: float) -> bool:
        return self.saver.close(timeout_s)
