"""The settings' header: a button that folds them away (as LM Studio's sidebar folds), and their summary while folded."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QToolButton, QWidget

from gui.untrusted_text import plain_tooltip

FOLD_TOOLTIP = (
    "Fold the model and sampling settings away, to give the chat their room; the line beside this button then says "
    "what they are. Folded or not, the window remembers it."
)


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


class FoldHeader(QWidget):
    """'▾ Settings' while unfolded; '▸ Settings  embedded · native · max new 256 …' while folded."""

    fold_changed = Signal(bool)  # folded

    def __init__(self, parent=None):
        super().__init__(parent)
        self.button = QToolButton()
        self.button.setObjectName("settings_fold_button")
        self.button.setText("Settings")
        self.button.setAutoRaise(True)  # flat: a heading that folds, not a switch held down while folded
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setToolTip(FOLD_TOOLTIP)
        self.summary = ElidedLine()
        self.summary.setObjectName("settings_summary")
        self.summary.setStyleSheet("color: #555;")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)
        layout.addWidget(self.summary, stretch=1)
        self._folded = False
        self.button.setArrowType(Qt.ArrowType.DownArrow)
        self.button.clicked.connect(self._on_clicked)

    @property
    def folded(self) -> bool:
        return self._folded

    def set_folded(self, folded: bool) -> None:
        if folded != self._folded:
            self._folded = folded
            self.button.setArrowType(Qt.ArrowType.RightArrow if folded else Qt.ArrowType.DownArrow)
            if not folded:
                self.summary.setText("")  # the fields say it; the line keeps its room, so the button stays put
            self.fold_changed.emit(folded)

    @Slot()
    def _on_clicked(self) -> None:
        self.set_folded(not self._folded)
