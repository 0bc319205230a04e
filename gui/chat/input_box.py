"""The message box: Enter sends, Shift+Enter adds a new line, and huge pastes are held aside under a marker."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor, QTextOption
from PySide6.QtWidgets import QPlainTextEdit

from gui.chat.large_paste import LARGE_PASTE_CHARS, PasteHolder, marker_ending_at, marker_starting_at


class InputBox(QPlainTextEdit):
    submitted = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setPlaceholderText("Type a message… (Enter sends, Shift+Enter for a new line)")
        self.setTabChangesFocus(True)
        # Qt's default (word boundary, else anywhere) lays out a long unbroken line in quadratic time.
        self.setWordWrapMode(QTextOption.WrapMode.WordWrap)
        self.pastes = PasteHolder()

    def message_text(self) -> str:
        """What Send sends: the typed text with every large paste put back in place of its marker."""
        return self.pastes.expand(self.toPlainText())

    def clear(self) -> None:
        super().clear()
        self.pastes.clear()

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 - Qt's name
        if source.hasText():
            text = source.text()
            if len(text) > LARGE_PASTE_CHARS:
                self.textCursor().insertText(self.pastes.hold(text))
                return
        super().insertFromMimeData(source)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            return
        if event.key() in (Qt.Key.Key_Backspace, Qt.Key.Key_Delete) and self._remove_whole_marker(event.key()):
            return
        super().keyPressEvent(event)

    def _remove_whole_marker(self, key: int) -> bool:
        """A marker stands for one paste: deleting into it removes all of it, never leaves half a marker."""
        cursor = self.textCursor()
        if cursor.hasSelection():
            return False
        block_text = cursor.block().text()
        at = _python_index(block_text, cursor.positionInBlock())
        span = marker_ending_at(block_text, at) if key == Qt.Key.Key_Backspace else marker_starting_at(block_text, at)
        if span is None:
            return False
        start = cursor.block().position()
        cursor.setPosition(start + _utf16_length(block_text[: span[0]]))
        cursor.setPosition(start + _utf16_length(block_text[: span[1]]), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self.setTextCursor(cursor)
        return True


def _utf16_length(text: str) -> int:
    # Qt counts positions in UTF-16 units: an emoji before the cursor counts twice.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _python_index(text: str, utf16_position: int) -> int:
    units = text.encode("utf-16-le", "surrogatepass")[: utf16_position * 2]
    return len(units.decode("utf-16-le", "surrogatepass"))
