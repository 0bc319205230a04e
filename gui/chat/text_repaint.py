"""A text view that repaints only down to its text's end, not the blank below it, when its document changes."""

from __future__ import annotations

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
        self._view = view
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
        view = self._view
        viewport = view.viewport()
        if not contents.isValid():
            viewport.update()
            return
        height = view.document().size().height()
        bottom, self._height = max(height, self._height), height
        x_offset, y_offset = view.horizontalScrollBar().value(), view.verticalScrollBar().value()
        shown = QRectF(x_offset, y_offset, viewport.width(), min(viewport.height(), bottom - y_offset))
        area = contents.intersected(shown).toAlignedRect()
        if not area.isEmpty():
            viewport.update(area.translated(-x_offset, -y_offset))
