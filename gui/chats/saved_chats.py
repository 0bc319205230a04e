"""The open chat and the saved ones: the sidebar, reopen, rename, delete, import and export, saving in the background.

A part the window is composed of. It owns the open chat's session and its per-reply records. It asks the window
only what it needs, through the callables it is handed (is a reply running, the chat's settings, the model's name,
notify), and reports a chat to redraw as signals; the dock it offers, the window places.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMessageBox

from core.chats.record import ChatFileError, ChatRecord, ReplyRecord, without_replaced
from core.chats.session import ChatSession, Message
from core.chats.store import ChatStore
from gui.chats.chat_keeper import ChatKeeper
from gui.chats.chat_list import ChatListPanel

Notify = Callable[[str, bool], None]  # a message that stays in the chat, and whether it reports a problem


class SavedChats(QObject):
    chat_opened = Signal(object)  # ChatRecord: a saved chat is now the open one; its replies and settings to show
    chat_cleared = Signal()  # a new, empty chat is open
    status_posted = Signal(str)  # a passing note for the status bar

    def __init__(
        self,
        system_prompt: str,
        busy: Callable[[], bool],
        chat_settings: Callable[[], dict],
        model_name: Callable[[], str | None],
        notify: Notify,
        store: ChatStore | None = None,
        parent=None,
    ):
        """busy: whether a reply is running; chat_settings: the settings saved with the chat; model_name: the
        loaded model's, or None."""
        super().__init__(parent)
        self._busy, self._chat_settings, self._model_name, self._notify = busy, chat_settings, model_name, notify
        self.session = ChatSession(system_prompt=system_prompt)
        self.records: list[ReplyRecord] = []  # one per finished reply, in order
        self.keeper = ChatKeeper(store, parent=self)
        self.keeper.save_failed.connect(self._on_save_failed)
        self.chat_list = ChatListPanel()
        self.dock = QDockWidget("Chats")
        self.dock.setObjectName("chats_dock")
        self.dock.setWidget(self.chat_list)
        self.dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.chat_list.open_requested.connect(self.open_chat)
        self.chat_list.rename_requested.connect(self.rename_chat)
        self.chat_list.delete_requested.connect(self._confirm_delete_chat)
        self.chat_list.export_requested.connect(self._export_chat_dialog)

    @property
    def current_chat_id(self) -> str:
        return self.keeper.current.chat_id

    def save(self, pending: bool | None = None) -> None:
        """Snapshot the open chat and queue its write (atomic, in the background).

        pending marks the last message as awaiting its reply (by default: while a reply runs).
        """
        self._capture(pending)
        self.keeper.save_current()
        self.refresh_list()

    @Slot(str)
    def open_chat(self, chat_id: str) -> bool:
        if chat_id == self.current_chat_id:
            return True
        if self._busy():
            self._notify("Stop the reply before opening another chat.", False)
            self.refresh_list()
            return False
        self.save()
        try:
            record = self.keeper.open(chat_id)
        except ChatFileError as error:
            self._file_problem(str(error))
            self.refresh_list()
            return False
        self._show_record(record)
        return True

    @Slot(str, str)
    def rename_chat(self, chat_id: str, title: str) -> None:
        try:
            self.keeper.rename(chat_id, title)
        except (ChatFileError, OSError) as error:
            self._notify(f"Could not rename the chat: {error}", True)
            self.refresh_list()
            return
        # Only this item changes: rebuilding the list here would delete the item whose edit is ending.
        self.chat_list.set_title(chat_id, self.keeper.summaries[chat_id].title)

    def delete_chat(self, chat_id: str) -> None:
        if chat_id == self.current_chat_id:
            if self._busy():
                self._notify("Stop the reply before deleting this chat.", False)
                return
            self.keeper.delete(chat_id)
            self.clear_to_new_chat()
        else:
            self.keeper.delete(chat_id)
            self.refresh_list()
        self.status_posted.emit("Chat deleted.")

    def export_chat(self, path: str | Path, chat_id: str | None = None) -> None:
        """Raises ChatFileError or OSError for the caller to show."""
        if chat_id is None or chat_id == self.current_chat_id:
            self._capture()
            chat_id = self.current_chat_id
        self.keeper.export(chat_id, Path(path))

    def import_chat(self, path: str | Path) -> bool:
        try:
            record = self.keeper.import_file(Path(path))
        except (ChatFileError, OSError) as error:
            self._notify(f"Import refused: {error}", True)
            return False
        self.refresh_list()
        if self._busy():
            self._notify(f"Imported “{record.title}”; it is in the list of chats.", False)
            return True
        return self.open_chat(record.chat_id)

    def clear_to_new_chat(self) -> None:
        self.keeper.start_new()
        self.session.clear()
        self.records.clear()
        self.chat_cleared.emit()
        self.refresh_list()

    def restore(self) -> None:
        """At launch: list every chat and reopen the newest; unreadable files are moved aside with a notice."""
        summaries = self.keeper.scan()
        if summaries:
            try:
                self._show_record(self.keeper.open(summaries[0].chat_id))
            except ChatFileError as error:
                self.keeper.start_new()
                self._file_problem(str(error))
        self.refresh_list()
        for notice in self.keeper.take_notices():
            self._file_problem(notice)

    def refresh_list(self) -> None:
        self.chat_list.set_chats(self.keeper.ordered_summaries(), self.current_chat_id)

    def close(self, timeout_s: float) -> bool:
        return self.keeper.close(timeout_s)

    def _capture(self, pending: bool | None = None) -> ChatRecord:
        return self.keeper.capture(
            self.session,
            self.records,
            self._chat_settings(),
            self._model_name(),
            generating=self._busy() if pending is None else pending,
        )

    def _show_record(self, record: ChatRecord) -> None:
        self.session = ChatSession(
            system_prompt=record.system_prompt, messages=[Message(m.role, m.content) for m in record.messages]
        )
        record.replies = without_replaced(record.replies)  # saved before Regenerate dropped the reply it replaced
        self.records = [ReplyRecord(reply.trace, reply.context) for reply in record.replies]
        self.chat_opened.emit(record)
        self.refresh_list()

    def _file_problem(self, message: str) -> None:
        """A chat file that could not be read: said in the chat, and under the list, where it stays."""
        self.chat_list.add_notice(message)
        self._notify(message, True)

    @Slot(str)
    def _on_save_failed(self, message: str) -> None:
        """Emitted on the chat saver's thread; a @Slot here, so it arrives queued on the GUI thread."""
        self._notify(message, True)

    # -- dialogs --------------------------------------------------------------------------------

    @Slot(str)
    def _confirm_delete_chat(self, chat_id: str) -> None:
        summary = self.keeper.summaries.get(chat_id)
        title = summary.title if summary else "this chat"
        answer = QMessageBox.question(
            self.chat_list.window(), "Delete chat", f"Delete “{title}”? This cannot be undone."
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_chat(chat_id)

    @Slot()
    def export_dialog(self) -> None:
        """File → Export chat…: the open chat. A slot of no arguments, so the menu's triggered(checked) cannot reach
        a chat id (it did: a traceback, and no file)."""
        self._export_chat_dialog(self.current_chat_id)

    @Slot(str)
    def _export_chat_dialog(self, chat_id: str) -> None:
        summary = self.keeper.summaries.get(chat_id)
        title = summary.title if summary else "chat"
        safe_name = "".join(ch if ch.isalnum() or ch in " -_" else "_" for ch in title).strip()[:60] or "chat"
        path, _ = QFileDialog.getSaveFileName(
            self.chat_list.window(), "Export chat", f"{safe_name}.json", "JSON (*.json)"
        )
        if path:
            try:
                self.export_chat(path, chat_id)
                self.status_posted.emit(f"Saved {Path(path).name}.")
            except (ChatFileError, OSError) as error:
                self._notify(f"Could not export the chat: {error}", True)

    @Slot()
    def import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.chat_list.window(), "Import chat", "", "JSON (*.json)")
        if path:
            self.import_chat(path)
