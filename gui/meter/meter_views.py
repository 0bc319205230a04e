"""The meter's views under its cards, a tab each: this reply's live plots, where its time went, and the whole chat."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtWidgets import QSplitter, QTabWidget, QVBoxLayout, QWidget

# The least height of a plot's data, in pixels: the plots' titles, legends and axes come on top (issue 41: a live
# plot kept 31 pixels for its points on a 1400 x 950 screen, when all of the meter's views shared one column).
LEAST_DATA_PX = 120


class MeterViews(QTabWidget):
    """One column held the cards, the budget, the waterfall, three plots and the cache map: about 1,000 pixels of
    height, so on a laptop each plot was a strip. The views share the room by tabs instead, two to a tab, and the
    tab a user picks stays picked. A view in a tab not shown is not painted, which costs the frames nothing."""

    def __init__(self, reply_views, time_views, chat_views, parent=None):
        super().__init__(parent)
        self.setObjectName("meter_views")
        self.setDocumentMode(True)  # no frame around the pages: their pixels go to the plots
        self.reply_page = self._page(reply_views)
        self.time_page = self._page(time_views, stretch_last=True)
        self.chat_page = self._page(chat_views)
        self.addTab(self.reply_page, "This reply")
        self.addTab(self.time_page, "Where the time went")
        self.addTab(self.chat_page, "This chat")
        self.pages = (self.reply_page, self.time_page, self.chat_page)
        self.setTabToolTip(
            0, "The reply streaming now, or the last one: its per-token intervals and its text on screen."
        )
        self.setTabToolTip(1, "Where the last reply's TTFT went, step by step; a server's own timings beside ours.")
        self.setTabToolTip(
            2, "Every reply of this chat: TTFT and TPOT against the prompt, and the prompt cache's reuse."
        )

    def show_view(self, view: QWidget) -> None:
        """Pick the tab that holds view."""
        self.setCurrentWidget(next(page for page in self.pages if page.isAncestorOf(view)))

    @staticmethod
    def _page(views, stretch_last: bool = False) -> QWidget:
        """Views that share their height; plots in a splitter, whose handle lets a user give one more."""
        if stretch_last:
            page = QWidget()
            layout = QVBoxLayout(page)
            layout.setContentsMargins(0, 4, 0, 0)
            for view in views:
                layout.addWidget(view)
            layout.addStretch(1)
            return page
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.setHandleWidth(8)  # one plot's axis title kept apart from the next one's title
        for view in views:
            splitter.addWidget(view)
        return splitter

    def page_pictures(self) -> list[QPixmap]:
        """Every tab's page, the plots' as large as the page shown: 'Export plots as PNG' saves them one under another."""
        shown = self.pages[self.currentIndex()]
        pictures = []
        for page in self.pages:
            if page is self.time_page and page is not shown:  # rows of text and bars: as tall as they are
                page.resize(shown.width(), min(shown.height(), page.sizeHint().height()))
            elif page is not shown:
                page.resize(shown.size())  # a page not shown keeps the size it last had, or none
            pictures.append(page.grab())
        return pictures


def stacked(pictures: list[QPixmap]) -> QPixmap:
    """Pictures one under another, on white, at the first one's device pixel ratio."""
    ratio = pictures[0].devicePixelRatio()
    width = max(picture.width() for picture in pictures)
    picture = QPixmap(width, sum(part.height() for part in pictures))
    picture.fill(Qt.GlobalColor.white)
    painter = QPainter(picture)
    top = 0
    for part in pictures:
        part.setDevicePixelRatio(1)  # drawn pixel for pixel: the whole picture takes the ratio back at the end
        painter.drawPixmap(0, top, part)
        top += part.height()
    painter.end()
    picture.setDevicePixelRatio(ratio)
    return picture
