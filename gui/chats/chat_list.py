"""The sidebar of saved chats: click to reopen, F2 or double-click to rename, right-click for more."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal, Slot
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QMenu, QVBoxLayout, QWidget

from core.chats.store import ChatSummary
from gui.untrusted_text import plain_label, plain_tooltip

_ID_ROLE = Qt.ItemDataRole.UserRole

# (chat id, title, tooltip) of a listed row; None where a hand edit made it unknown until the next listing.
Row = tuple[str, str | None, str | None]


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
        # A long title ends in "..." (its tooltip has it whole), not in a scroll bar under a list of a few lines.
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setToolTip(
            "Saved chats, newest first. Click to open, F2 or double-click to rename, right-click to export or delete."
        )
        self.notice = plain_label()
        self.notice.setObjectName("chat_list_notice")
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("color: #b00020;")
        self.notice.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.list, stretch=1)
        layout.addWidget(self.notice)
        self._filling = False
        self._shown: list[Row] = []  # (chat id, title, tooltip) of each row, as listed
        self.list.itemClicked.connect(self._on_item_clicked)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.customContextMenuRequested.connect(self._on_context_menu)

    def set_chats(self, summaries: list[ChatSummary], current_id: str | None) -> None:
        """Show these chats in this order. Only the items whose words changed are touched, and a chat new or moved to
        the top (its first message, or a message in an older chat) is one item inserted there; the list is rebuilt
        only when the order changes otherwise (every message sent saves the chat and lists the chats again: rebuilding
        500 items took 10 ms and repainted the whole list)."""
        shown = [(summary.chat_id, summary.title, _tooltip(summary)) for summary in summaries]
        self._filling = True
        try:
            ids = [chat_id for chat_id, _, _ in shown]
            if ids != [chat_id for chat_id, _, _ in self._shown] and not self._raise_to_top(ids):
                self._rebuild(shown)
            else:
                for row, (now, before) in enumerate(zip(shown, self._shown)):
                    if now != before:
                        item = self.list.item(row)
                        item.setText(now[1])
                        item.setToolTip(now[2])
            self._shown = list[Row](shown)
            current = self.item_for(current_id) if current_id is not None else None
            if current is not None and current is not self.list.currentItem():
                self.list.setCurrentItem(current)
        finally:
            self._filling = False

    def _rebuild(self, shown: list[tuple[str, str, str]]) -> None:
        self.list.clear()
        for chat_id, title, tooltip in shown:
            self.list.addItem(_item(chat_id, title, tooltip))

    def _raise_to_top(self, ids: list[str]) -> bool:
        """Where ids is the listed order with its first chat added or moved to the top, put that chat's item there
        (its words are set by the caller, as a changed row's) and say so; otherwise change nothing."""
        top, listed = ids[0] if ids else None, [chat_id for chat_id, _, _ in self._shown]
        if top is None or ids[1:] != [chat_id for chat_id in listed if chat_id != top]:
            return False
        if top in listed:
            row = listed.index(top)
            item = self.list.takeItem(row)
            del self._shown[row]
        else:
            item = _item(top, "", "")
        self.list.insertItem(0, item)
        self._shown.insert(0, (top, None, None))
        return True

    def chat_ids(self) -> list[str]:
        return [self.list.item(row).data(_ID_ROLE) for row in range(self.list.count())]

    def titles(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    def item_for(self, chat_id: str) -> QListWidgetItem | None:
        for row, (shown_id, _, _) in enumerate(self._shown):
            if shown_id == chat_id:
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
        self._forget_row(chat_id)  # the next listing sets its words again

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
            self._forget_row(item.data(_ID_ROLE))  # edited by hand: the next listing shows the title the chat kept
            self.rename_requested.emit(item.data(_ID_ROLE), item.text())

    def _forget_row(self, chat_id: str) -> None:
        self._shown = [
            (shown_id, None, None) if shown_id == chat_id else (shown_id, title, tooltip)
            for shown_id, title, tooltip in self._shown
        ]

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


def _item(chat_id: str, title: str, tooltip: str) -> QListWidgetItem:
    item = QListWidgetItem(title)
    item.setData(_ID_ROLE, chat_id)
    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
    item.setToolTip(tooltip)
    return item


def _tooltip(summary: ChatSummary) -> str:
    return plain_tooltip(f"{summary.title}\n{summary.message_count} messages · last saved {summary.updated_at}")
