"""The settings' header: a button that folds them away (as LM Studio's sidebar folds), and their summary while folded."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QToolButton, QWidget

from gui.elided_line import ElidedLine

FOLD_TOOLTIP = (
    "Fold the model and sampling settings away, to give the chat their room; the line beside this button then says "
    "what they are. Folded or not, the window remembers it."
)


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
