"""A scroll area that scrolls its widget up and down only: as wide as the widget needs, as short as the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


class VerticalScroll(QScrollArea):
    """The meter's column and the Lab's plots need more height than a 768-pixel laptop screen leaves a window; they
    scroll instead of setting the window's least height. Their width is kept whole: a column squeezed sideways
    scrolled both ways and hid the right of every card.

    The widget fills the view, and is never shorter than its least height. QScrollArea's own widgetResizable is not
    used: for a layout with a wrapping label in it, it takes the layout's height for the width, which adds up the
    plots' preferred heights (1,346 pixels for the meter), so the meter scrolled on a screen it fits."""

    def __init__(self, widget: QWidget, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWidget(widget)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        widget.installEventFilter(self)
        self.viewport().installEventFilter(self)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        width = self._content().minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width()
        return QSize(width, super().minimumSizeHint().height())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        kind = event.type()
        if (watched is self.viewport() and kind == QEvent.Type.Resize) or (
            watched is self.widget() and kind == QEvent.Type.LayoutRequest
        ):
            self._fit()
        return False

    def _fit(self) -> None:
        view, widget = self.viewport().size(), self._content()
        wanted = QSize(view.width(), max(view.height(), widget.minimumSizeHint().height()))
        if widget.size() != wanted:
            widget.resize(wanted)

    def _content(self) -> QWidget:
        widget = self.widget()
        assert widget is not None  # set in the constructor, never taken
        return widget
