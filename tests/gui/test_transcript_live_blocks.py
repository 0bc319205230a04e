"""A long live paragraph is cut into short blocks at wrap points: no visible change, and no block keeps growing."""

import gui.chat.transcript_view as transcript_module
from gui.chat.transcript_view import LIVE_BLOCK_LINES, TranscriptView

WORDS = ("The keeper climbed the stairs again, counting each step as the storm rose over the bay. " * 30).split(" ")


def stream_reply(qtbot, lines_per_block, monkeypatch):
    monkeypatch.setattr(transcript_module, "LIVE_BLOCK_LINES", lines_per_block)
    view = TranscriptView()
    qtbot.addWidget(view)
    view.resize(500, 900)
    view.show()
    qtbot.waitExposed(view)
    view.add_user_turn("Tell me about the lighthouse.")
    view.begin_assistant_turn()
    for word in WORDS:
        view.append_reply_text(word + " ")
    return view


def test_live_reply_blocks_stay_short_and_look_like_one_paragraph(qtbot, monkeypatch):
    cut = stream_reply(qtbot, LIVE_BLOCK_LINES, monkeypatch)
    whole = stream_reply(qtbot, 10**6, monkeypatch)
    assert cut.document().blockCount() >= whole.document().blockCount() + 3  # the reply was cut several times
    block = cut.document().begin()
    while block.isValid():
        assert block.layout().lineCount() <= LIVE_BLOCK_LINES + 1
        block = block.next()
    assert cut.grab().toImage() == whole.grab().toImage()


def test_finished_reply_replaces_the_cut_blocks_with_its_text(qtbot, monkeypatch):
    view = stream_reply(qtbot, LIVE_BLOCK_LINES, monkeypatch)
    text = " ".join(WORDS).strip()
    view.finish_assistant_turn(text, message_index=1)
    assert text in view.toPlainText().replace("\n", " ") and text.split(". ")[0] in view.toPlainText()
    assert view.toPlainText().count("\n") <= 4  # header lines and the copy link, not the cuts


def test_a_streamed_and_finished_reply_keeps_no_undo_history(qtbot, monkeypatch):
    view = stream_reply(qtbot, LIVE_BLOCK_LINES, monkeypatch)
    view.finish_assistant_turn(" ".join(WORDS).strip(), message_index=1)
    assert view.document().availableUndoSteps() == 0  # one step a token otherwise, for the whole session
