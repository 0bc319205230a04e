"""One line of plain text that fits its width: cut with '…', the whole of it in the tooltip."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from gui.untrusted_text import plain_tooltip


class ElidedLine(QWidget):
    """One line of plain text, cut with '…' at its right end when narrower than the text; the whole text in its
    tooltip. It never widens the window: a long model path in a QLabel would have."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._text = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(self.fontMetrics().height())

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel's name
        self._text = text
        self.setToolTip(plain_tooltip(text))
        self.update()

    def text(self) -> str:
        return self._text

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        shown = self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, self.width())
        painter.drawText(self.rect(), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, shown)

    def set_tooltip_after(self, more: str) -> None:
        """The tooltip: the whole line, then more (what the line means)."""
        self.setToolTip(plain_tooltip(f"{self._text}\n\n{more}" if more else self._text))
