"""A huge paste is held aside under a marker: the box stays responsive and Send still sends every character."""

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence, QTextCursor

from gui.chat.input_box import InputBox
from gui.chat.large_paste import LARGE_PASTE_CHARS
from tests.support.window_driving import StallProbe

ONE_LINE_NO_SPACES = "x" * 1_000_000
MANY_LINES = ("The quick brown fox jumps over the lazy dog; ünïcödé 👋 שלום.\n" * 20_000)[:1_000_000]


@pytest.fixture
def box(qtbot):
    widget = InputBox()
    qtbot.addWidget(widget)
    widget.resize(600, 90)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def paste(qtbot, widget, text):
    QGuiApplication.clipboard().setText(text)
    qtbot.keySequence(widget, QKeySequence.StandardKey.Paste)


def paste_between_typing(qtbot, box, text) -> float:
    """Type, paste, type again; the longest freeze of the event loop meanwhile, in seconds."""
    qtbot.keyClicks(box, "Summarise: ")
    with StallProbe() as probe:
        paste(qtbot, box, text)
        qtbot.keyClicks(box, " thanks")
        qtbot.wait(100)
    return probe.max_stall_s


@pytest.mark.parametrize("text", [ONE_LINE_NO_SPACES, MANY_LINES], ids=["one-line", "many-lines"])
def test_a_1mb_paste_is_held_under_a_marker_and_sends_intact(qtbot, box, text):
    paste_between_typing(qtbot, box, text)
    # What keeps the box responsive: the million characters are never laid out in it.
    assert box.toPlainText() == "Summarise: ⟦pasted text #1: 1,000,000 characters⟧ thanks"
    assert box.message_text() == "Summarise: " + text + " thanks"


def test_a_small_paste_goes_into_the_box_as_it_is(qtbot, box):
    text = "y" * LARGE_PASTE_CHARS
    paste(qtbot, box, text)
    assert box.toPlainText() == text and box.message_text() == text and len(box.pastes) == 0


def test_backspace_and_delete_remove_a_marker_whole_and_undo_brings_it_back(qtbot, box):
    box.insertPlainText("a👋 ")  # QTest cannot type a character outside the BMP
    paste(qtbot, box, ONE_LINE_NO_SPACES)
    qtbot.keyClick(box, Qt.Key.Key_Backspace)
    assert box.toPlainText() == "a👋 " and box.message_text() == "a👋 "
    box.undo()
    assert box.message_text() == "a👋 " + ONE_LINE_NO_SPACES
    box.moveCursor(QTextCursor.MoveOperation.Start)
    for _ in range(3):  # "a", the emoji (two UTF-16 units, one cursor step), the space
        qtbot.keyClick(box, Qt.Key.Key_Right)
    qtbot.keyClick(box, Qt.Key.Key_Delete)
    assert box.toPlainText() == "a👋 "


def test_clearing_the_box_forgets_the_pastes(qtbot, box):
    paste(qtbot, box, ONE_LINE_NO_SPACES)
    box.clear()
    assert box.message_text() == "" and len(box.pastes) == 0


@pytest.mark.timing
@pytest.mark.parametrize("text", [ONE_LINE_NO_SPACES, MANY_LINES], ids=["one-line", "many-lines"])
def test_a_1mb_paste_never_freezes_the_box_for_250ms(qtbot, box, text):
    assert paste_between_typing(qtbot, box, text) < 0.250


@pytest.mark.timing
def test_typing_after_a_long_typed_line_stays_fast(qtbot, box):
    # Below the paste threshold the text goes into the box; word wrapping keeps its layout linear.
    box.insertPlainText("z" * (LARGE_PASTE_CHARS - 1))
    started = time.perf_counter()
    qtbot.keyClicks(box, "abc")
    qtbot.wait(10)
    assert time.perf_counter() - started < 0.5
