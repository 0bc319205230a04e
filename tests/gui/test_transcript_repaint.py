"""A live reply in a short chat repaints its lines, not the blank view below them; a shrinking text leaves nothing."""

import pytest
from PySide6.QtCore import QEvent, QObject

from gui.chat.transcript_view import TranscriptView

# On Xvfb too (`make test`): offscreen, a grab of the window is drawn afresh, so it cannot show a stale line.
pytestmark = pytest.mark.plots

WORDS = [
    "The",
    "keeper",
    "climbed",
    "the",
    "stairs",
    "again,",
    "counting",
    "each",
    "step",
    "as",
    "the",
    "storm",
    "rose",
    "over",
    "the",
    "bay.",
]


class PaintLog(QObject):
    def __init__(self, widget):
        super().__init__()
        self.rects = []
        widget.installEventFilter(self)

    def eventFilter(self, watched, event):  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint:
            self.rects.append(event.rect())
        return False


def _shown_view(qtbot) -> TranscriptView:
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(500, 600)
    view.show()
    qtbot.waitExposed(view)
    assert view.text_repaint.active  # this Qt's text view is the one the clipping was written for
    return view


def _on_screen_as_drawn(view) -> bool:
    """What the screen holds for the view (the backing store) is what the view draws afresh: nothing stale left."""
    on_screen = view.screen().grabWindow(view.window().winId(), 0, 0, view.width(), view.height()).toImage()
    return on_screen == view.grab().toImage().convertToFormat(on_screen.format())


def test_a_live_reply_in_a_short_chat_repaints_only_down_to_its_text(qtbot):
    view = _shown_view(qtbot)
    view.add_user_turn("Tell me about the lighthouse.")
    view.begin_assistant_turn()
    log = PaintLog(view.viewport())
    view.append_reply_text(WORDS[0] + " ")
    qtbot.waitUntil(lambda: bool(log.rects), timeout=2000)  # the new turn's paint, with the first word's
    log.rects.clear()
    for word in WORDS[1:]:
        view.append_reply_text(word + " ")
        qtbot.waitUntil(lambda: bool(log.rects), timeout=2000)  # this word's frame painted
        text_end = view.document().size().height() - view.verticalScrollBar().value()
        assert all(rect.bottom() <= text_end + 1 for rect in log.rects), (log.rects, text_end)
        log.rects.clear()
    assert text_end < view.viewport().height() / 2  # the view's lower half stayed blank and unpainted


def test_text_that_gets_shorter_leaves_no_stale_lines_on_screen(qtbot):
    view = _shown_view(qtbot)
    view.add_user_turn("Tell me about the lighthouse.")
    view.begin_assistant_turn()
    for word in WORDS * 6:
        view.append_reply_text(word + " ")
    qtbot.waitUntil(lambda: _on_screen_as_drawn(view), timeout=3000)
    view.finish_assistant_turn("Short.", message_index=1)  # six lines of live text become one
    qtbot.waitUntil(lambda: _on_screen_as_drawn(view), timeout=3000)
    view.clear_transcript()
    qtbot.waitUntil(lambda: _on_screen_as_drawn(view), timeout=3000)
