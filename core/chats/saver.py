"""Write chat files on one background thread, so a slow disk or fsync never stalls the window."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from core.chats.record import ChatRecord
from core.chats.store import ChatStore

_DELETE = object()


class BackgroundSaver:
    """Queue of pending writes, one per chat: a newer snapshot or a delete replaces a queued older one.

    save() takes a shallow snapshot on the caller's thread (O(messages), no text copied), so the caller may
    keep changing the record; the document is built and encoded here, on the saver thread.
    on_error is called on the saver thread with a message for the user: a failed write, or a chat that
    another process changed meanwhile and that was therefore saved as a conflict copy (ChatStore.write_document).
    """

    def __init__(self, store: ChatStore, on_error: Callable[[str], None] | None = None):
        self.store = store
        self.on_error = on_error
        self._pending: OrderedDict[str, object] = OrderedDict()
        self._condition = threading.Condition()
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.writes = 0

    def save(self, record: ChatRecord) -> None:
        self._enqueue(record.chat_id, record.snapshot())

    def delete(self, chat_id: str) -> None:
        self._enqueue(chat_id, _DELETE)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued write is on disk; False if that took longer than timeout_s."""
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while self._pending or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._condition.wait(remaining):
                    return not (self._pending or self._busy)
        return True

    def close(self, timeout_s: float = 5.0) -> bool:
        """Finish the queued writes, then end the thread. Later saves are written synchronously."""
        done = self.flush(timeout_s)
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        thread = self._thread
        if thread is not None and done:
            thread.join(timeout_s)
            self._thread = None
        return done

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _enqueue(self, chat_id: str, item: object) -> None:
        with self._condition:
            if self._closed:
                closed = True
            else:
                closed = False
                self._pending[chat_id] = item
                self._pending.move_to_end(chat_id)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="latencylab-chat-saver", daemon=True)
                    self._thread.start()
                self._condition.notify_all()
        if closed:
            self._write(chat_id, item)  # a window that is closing still gets its last word on disk

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closed:
                    self._condition.wait()
                if not self._pending:
                    return
                chat_id, item = self._pending.popitem(last=False)
                self._busy = True
            try:
                self._write(chat_id, item)
            finally:
                with self._condition:
                    self._busy = False
                    self._condition.notify_all()

    def _write(self, chat_id: str, item: object) -> None:
        try:
            notice = None
            if isinstance(item, ChatRecord):
                notice = self.store.write_document(item.to_document())
            else:  # _DELETE
                self.store.delete(chat_id)
            self.writes += 1
            if notice and self.on_error is not None:
                self.on_error(notice)
        except Exception as error:  # noqa: BLE001 - a failed write must reach the user, not end the thread
            if self.on_error is not None:
                self.on_error(f"Could not save the chat: {type(error).__name__}: {error}")
