"""A text view that repaints only down to its text's end, not the blank below it, when its document changes."""

from __future__ import annotations

import math
from typing import cast

from PySide6.QtCore import SIGNAL, QObject, QRectF, Slot
from PySide6.QtWidgets import QTextEdit

CONTROL_CLASS = "QWidgetTextControl"
UPDATE_SIGNAL = "updateRequest(QRectF)"


class TextRepaint(QObject):
    """Stands in for QTextEdit's own answer to its document's update requests, clipped at the text's end.

    Qt's text layout asks for everything from a changed line down to the end of the view: with a short chat, a
    live reply's every frame repainted (and sent to the screen) the blank area below it, 200,000 pixels, to draw
    one line. Below the text there is nothing to draw, unless the text just got shorter: so the area is clipped
    at the taller of the text's height now and at the last request. Where Qt's private text control is not found
    (another Qt), the view is left as Qt made it.
    """

    def __init__(self, view: QTextEdit):
        super().__init__(view)
        # Kept, not asked for at each request: the request comes once or twice a frame while a reply streams, and
        # the clipping is worked out in Python numbers, so a request costs seven calls into Qt instead of sixteen.
        # The view keeps the document it has now (a view given another document needs a TextRepaint of its own).
        self._document, self._viewport = view.document(), view.viewport()
        self._horizontal, self._vertical = view.horizontalScrollBar(), view.verticalScrollBar()
        self._height = 0.0  # the document's height at the last request
        controls = [child for child in view.findChildren(QObject) if child.metaObject().className() == CONTROL_CLASS]
        self.active = len(controls) == 1 and controls[0].receivers("2" + UPDATE_SIGNAL) == 1
        if self.active:
            control = controls[0]
            # Only the view listened (checked above). PySide's stubs lack the old-style (sender, signal, None, None).
            QObject.disconnect(control, SIGNAL(UPDATE_SIGNAL), None, None)  # type: ignore[call-overload]
            QObject.connect(control, SIGNAL(UPDATE_SIGNAL), self._repaint)

    @Slot(QRectF)
    def _repaint(self, contents: QRectF) -> None:
        if not contents.isValid():
            self._viewport.update()
            return
        # PySide's stubs type getRect() as object; it is (x, y, width, height).
        left, top, width, height = cast("tuple[float, float, float, float]", contents.getRect())
        document_height = self._document.size().height()
        bottom = min(top + height, max(document_height, self._height))
        self._height = document_height
        if bottom <= top:
            return
        # In the viewport's pixels, outward to whole ones; QWidget.update clips what lies outside the viewport.
        x_offset, y_offset = self._horizontal.value(), self._vertical.value()
        x, y = math.floor(left) - x_offset, math.floor(top) - y_offset
        self._viewport.update(x, y, math.ceil(left + width) - x_offset - x, math.ceil(bottom) - y_offset - y)
