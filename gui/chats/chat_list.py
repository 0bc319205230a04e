"""The sidebar of saved chats: click to reopen, F2 or double-click to rename, right-click for more."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QMenu, QVBoxLayout, QWidget

from core.chats.store import ChatSummary

_ID_ROLE = Qt.ItemDataRole.UserRole


class ChatListPanel(QWidget):
    open_requested = Signal(str)  # chat id
    rename_requested = Signal(str, str)  # chat id, new title
    delete_requested = Signal(str)
    export_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setObjectName("chat_list")
        self.list.setEditTriggers(QListWidget.EditTrigger.EditKeyPressed | QListWidget.EditTrigger.DoubleClicked)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setToolTip(
            "Saved chats, newest first. Click to open, F2 or double-click to rename, right-click to export or delete."
        )
        self.notice = QLabel("")
        self.notice.setObjectName("chat_list_notice")
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("color: #b00020;")
        self.notice.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.list, stretch=1)
        layout.addWidget(self.notice)
        self._filling = False
        self.list.itemClicked.connect(self._on_item_clicked)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.customContextMenuRequested.connect(self._on_context_menu)

    def set_chats(self, summaries: list[ChatSummary], current_id: str | None) -> None:
        self._filling = True
        try:
            self.list.clear()
            for summary in summaries:
                item = QListWidgetItem(summary.title)
                item.setData(_ID_ROLE, summary.chat_id)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
                item.setToolTip(f"{summary.title}\n{summary.message_count} messages · last saved {summary.updated_at}")
                self.list.addItem(item)
                if summary.chat_id == current_id:
                    self.list.setCurrentItem(item)
        finally:
            self._filling = False

    def chat_ids(self) -> list[str]:
        return [self.list.item(row).data(_ID_ROLE) for row in range(self.list.count())]

    def titles(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    def item_for(self, chat_id: str) -> QListWidgetItem | None:
        for row in range(self.list.count()):
            if self.list.item(row).data(_ID_ROLE) == chat_id:
                return self.list.item(row)
        return None

    def set_title(self, chat_id: str, title: str) -> None:
        item = self.item_for(chat_id)
        if item is not None and item.text() != title:
            self._filling = True
            try:
                item.setText(title)
            finally:
                self._filling = False

    def add_notice(self, message: str) -> None:
        """Problems with chat files stay visible under the list until the app restarts."""
        text = self.notice.text()
        self.notice.setText(f"{text}\n{message}" if text else message)
        self.notice.setVisible(True)

    @Slot(QListWidgetItem)
    def _on_item_clicked(self, item: QListWidgetItem) -> None:
        self.open_requested.emit(item.data(_ID_ROLE))

    @Slot(QListWidgetItem)
    def _on_item_changed(self, item: QListWidgetItem) -> None:
        if not self._filling:
            self.rename_requested.emit(item.data(_ID_ROLE), item.text())

    @Slot(QPoint)
    def _on_context_menu(self, position: QPoint) -> None:
        item = self.list.itemAt(position)
        if item is None:
            return
        chat_id = item.data(_ID_ROLE)
        menu = QMenu(self)
        open_action = menu.addAction("Open")
        rename_action = menu.addAction("Rename")
        export_action = menu.addAction("Export as JSON…")
        menu.addSeparator()
        delete_action = menu.addAction("Delete…")
        chosen = menu.exec(self.list.viewport().mapToGlobal(position))
        if chosen is open_action:
            self.open_requested.emit(chat_id)
        elif chosen is rename_action:
            self.list.editItem(item)
        elif chosen is export_action:
            self.export_requested.emit(chat_id)
        elif chosen is delete_action:
            self.delete_requested.emit(chat_id)
