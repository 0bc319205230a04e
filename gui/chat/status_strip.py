"""The row below the transcript that holds the prefill bar and the generating indicator, each half its width."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


class StatusStrip(QWidget):
    """Places its two children itself, with no layout: showing or hiding one then stops here.

    In a layout, a child shown or hidden changes the layout's minimum size, and that request climbs every layout up
    to the window. The tab widget answers it by repainting all of itself: the whole tab, twice a reply (when the
    prefill bar shows and when the first token hides it), on the GUI thread that decode shares.
    """

    def __init__(self, left: QWidget, right: QWidget, parent=None):
        super().__init__(parent)
        self._left, self._right = left, right
        for child in (left, right):
            child.setParent(self)
        self.setFixedHeight(max(left.sizeHint().height(), right.sizeHint().height()))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        half = self.width() // 2
        self._left.setGeometry(0, 0, half, self.height())
        self._right.setGeometry(half, 0, self.width() - half, self.height())
