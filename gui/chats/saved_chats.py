"""The chat window's saved-chat behaviour: the sidebar, reopen, rename, delete, import and export.

A mixin of MainWindow, kept apart so the window file stays about chatting and measuring.
It uses the window's session, traces, trace_context, transcript, meter, settings panel and chats (ChatKeeper).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMessageBox

from core.chats.session import ChatSession, Message
from core.chats.record import ChatFileError, ChatRecord
from core.errors import InvalidSettingsError
from gui.chats.chat_list import ChatListPanel
from gui.chats.chat_replay import replay_chat
from gui.settings.check import apply_chat_settings


class SavedChatsMixin:
    def _build_chat_dock(self) -> None:
        self.chat_list = ChatListPanel()
        self.chat_dock = QDockWidget("Chats", self)
        self.chat_dock.setObjectName("chats_dock")
        self.chat_dock.setWidget(self.chat_list)
        self.chat_dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                                   | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.chat_dock)
        self.chat_list.open_requested.connect(self.open_chat)
        self.chat_list.rename_requested.connect(self.rename_chat)
        self.chat_list.delete_requested.connect(self._confirm_delete_chat)
        self.chat_list.export_requested.connect(self._export_chat_dialog)

    @property
    def current_chat_id(self) -> str:
        return self.chats.current.chat_id

    def save_chat(self) -> None:
        """Snapshot the open chat and queue its write (atomic, in the background)."""
        self._capture_chat()
        self.chats.save_current()
        self._refresh_chat_list()

    @Slot(str)
    def open_chat(self, chat_id: str) -> bool:
        if chat_id == self.current_chat_id:
            return True
        if self._generating:
            self._notify("Stop the reply before opening another chat.")
            self._refresh_chat_list()
            return False
        self.save_chat()
        try:
            record = self.chats.open(chat_id)
        except ChatFileError as error:
            self._notify(str(error), is_error=True, in_chat_list=True)
            self._refresh_chat_list()
            return False
        self._show_record(record)
        return True

    @Slot(str, str)
    def rename_chat(self, chat_id: str, title: str) -> None:
        try:
            self.chats.rename(chat_id, title)
        except (ChatFileError, OSError) as error:
            self._notify(f"Could not rename the chat: {error}", is_error=True)
            self._refresh_chat_list()
            return
        # Only this item changes: rebuilding the list here would delete the item whose edit is ending.
        self.chat_list.set_title(chat_id, self.chats.summaries[chat_id].title)

    def delete_chat(self, chat_id: str) -> None:
        if chat_id == self.current_chat_id:
            if self._generating:
                self._notify("Stop the reply before deleting this chat.")
                return
            self.chats.delete(chat_id)
            self._clear_to_new_chat()
        else:
            self.chats.delete(chat_id)
            self._refresh_chat_list()
        self.statusBar().showMessage("Chat deleted.", 3000)

    def export_chat(self, path: str | Path, chat_id: str | None = None) -> None:
        """Raises ChatFileError or OSError for the caller to show."""
        if chat_id is None or chat_id == self.current_chat_id:
            self._capture_chat()
            chat_id = self.current_chat_id
        self.chats.export(chat_id, Path(path))

    def import_chat(self, path: str | Path) -> bool:
        try:
            record = self.chats.import_file(Path(path))
        except (ChatFileError, OSError) as error:
            self._notify(f"Import refused: {error}", is_error=True)
            return False
        self._refresh_chat_list()
        if self._generating:
            self._notify(f"Imported “{record.title}”; it is in the list of chats.")
            return True
        return self.open_chat(record.chat_id)

    def _capture_chat(self) -> ChatRecord:
        return self.chats.capture(self.session, self.traces, self.trace_context, self._chat_settings(),
                                  self.loaded.name if self.loaded else None, reply_pending=self._generating)

    def _clear_to_new_chat(self) -> None:
        self.chats.start_new()
        self.session.clear()
        self.transcript.clear_transcript()
        self.traces.clear()
        self.trace_context.clear()
        self.meter.reset_chat()
        self._refresh_chat_list()
        self._update_controls()
        self.input_box.setFocus()

    def _show_record(self, record: ChatRecord) -> None:
        self.session = ChatSession(system_prompt=record.system_prompt,
                                   messages=[Message(m.role, m.content) for m in record.messages])
        self.traces = [reply.trace for reply in record.replies]
        self.trace_context = [dict(reply.context) for reply in record.replies]
        self.settings_panel.system_prompt.setPlainText(record.system_prompt)
        replay_chat(record, self.transcript, self.meter)
        for problem in apply_chat_settings(self.settings_panel, record.settings):
            self._notify(problem, is_error=True)
        self._refresh_chat_list()
        self._update_controls()

    def _restore_chats(self) -> None:
        """At launch: list every chat and reopen the newest; unreadable files are moved aside with a notice."""
        summaries = self.chats.scan()
        if summaries:
            try:
                self._show_record(self.chats.open(summaries[0].chat_id))
            except ChatFileError as error:
                self.chats.start_new()
                self._notify(str(error), is_error=True, in_chat_list=True)
        self._refresh_chat_list()
        for notice in self.chats.take_notices():
            self._notify(notice, is_error=True, in_chat_list=True)

    def _refresh_chat_list(self) -> None:
        self.chat_list.set_chats(self.chats.ordered_summaries(), self.current_chat_id)

    def _chat_settings(self) -> dict:
        try:
            settings = self.settings_panel.generation_settings().to_dict()
        except InvalidSettingsError:
            settings = {}
        return {**settings, "streaming": self.streaming_toggle.isChecked()}

    def _notify(self, message: str, is_error: bool = False, in_chat_list: bool = False) -> None:
        """Shown in the chat, where it stays, and in the status bar; file problems also under the list."""
        self.transcript.add_notice(message, is_error=is_error)
        self.statusBar().showMessage(message, 10000)
        if in_chat_list:
            self.chat_list.add_notice(message)

    # -- dialogs --------------------------------------------------------------------------------

    @Slot(str)
    def _confirm_delete_chat(self, chat_id: str) -> None:
        summary = self.chats.summaries.get(chat_id)
        title = summary.title if summary else "this chat"
        answer = QMessageBox.question(self, "Delete chat", f"Delete “{title}”? This cannot be undone.")
        if answer == QMessageBox.StandardButton.Yes:
            self.delete_chat(chat_id)

    def _export_chat_to(self, chat_id: str | None) -> None:
        summary = self.chats.summaries.get(chat_id or self.current_chat_id)
        title = summary.title if summary else "chat"
        safe_name = "".join(ch if ch.isalnum() or ch in " -_" else "_" for ch in title).strip()[:60] or "chat"
        path, _ = QFileDialog.getSaveFileName(self, "Export chat", f"{safe_name}.json", "JSON (*.json)")
        if path:
            try:
                self.export_chat(path, chat_id)
                self.statusBar().showMessage(f"Saved {Path(path).name}.", 3000)
            except (ChatFileError, OSError) as error:
                self._notify(f"Could not export the chat: {error}", is_error=True)

    @Slot(str)
    def _export_chat_dialog(self, chat_id: str) -> None:
        self._export_chat_to(chat_id)

    @Slot()
    def _export_current_chat_dialog(self) -> None:
        self._export_chat_to(None)

    @Slot()
    def _import_chat_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import chat", "", "JSON (*.json)")
        if path:
            self.import_chat(path)
