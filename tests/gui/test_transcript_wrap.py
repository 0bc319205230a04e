"""A reply with no spaces wraps in the view instead of scrolling sideways, and copies back intact (issue #14)."""

from PySide6.QtGui import QGuiApplication

from gui.chat.long_runs import ZERO_WIDTH_SPACE, break_long_runs, without_breaks
from gui.chat.transcript_view import TranscriptView

# What the embedded model answers to "Count from 1 to 40": digits in a row, no space.
DIGITS = "".join(str(index % 10) for index in range(300))


def _view(qtbot) -> TranscriptView:
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    qtbot.waitExposed(view)
    view.add_user_turn("Count from 1 to 40")
    view.begin_assistant_turn()
    return view


def test_a_live_reply_of_300_digits_wraps(qtbot):
    view = _view(qtbot)
    for start in range(0, len(DIGITS), 2):
        view.append_reply_text(DIGITS[start : start + 2])
    assert view.horizontalScrollBar().maximum() == 0
    assert DIGITS in view.toPlainText().replace("\n", "").replace("\u2029", "")


def test_a_finished_reply_of_300_digits_wraps_and_copies_intact(qtbot):
    view = _view(qtbot)
    view.append_reply_text(DIGITS)
    view.finish_assistant_turn(DIGITS, message_index=1)
    assert view.horizontalScrollBar().maximum() == 0
    view.selectAll()
    view.copy()
    copied = QGuiApplication.clipboard().text()
    assert DIGITS in copied and ZERO_WIDTH_SPACE not in copied


def test_break_points_go_only_into_long_runs_and_never_into_links():
    assert break_long_runs("a short reply, with words") == "a short reply, with words"
    broken = break_long_runs(f"Here: {DIGITS}.")
    assert ZERO_WIDTH_SPACE in broken and without_breaks(broken) == f"Here: {DIGITS}."
    assert max(len(piece) for piece in broken.split(ZERO_WIDTH_SPACE)) < 100
    link = "[the source](https://example.com/" + "a" * 300 + ")"
    assert break_long_runs(link) == link
