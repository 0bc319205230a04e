"""A reply, a server's words or a file's may name files in Markdown or HTML: the window shows them, and opens none."""

from __future__ import annotations

import os

import pytest
from file_opens import OpenWatch
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication, QToolTip

from tests.remote.scripted_server import Script, ScriptedServer, openai_chunk
from tests.remote.test_remote_window import _ask, _connect

# A sparse file: 200 MB long, a few bytes on disk.
BIG_FILE_BYTES = 200 * 2**20


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A folder of files a hostile text names (a secret, a FIFO, a 200 MB file), watched for opens from here on.

    The working directory is the folder, so a relative name in a reply names one of them too."""
    folder = tmp_path / "planted"
    folder.mkdir()
    (folder / "secret.txt").write_text("root:x:0:0\n")
    os.mkfifo(folder / "pipe")
    os.truncate(folder / "secret.txt", 11)
    with open(folder / "big.bin", "wb") as handle:
        handle.truncate(BIG_FILE_BYTES)
    monkeypatch.chdir(folder)
    with OpenWatch(folder) as watch:
        yield folder, watch


def hostile_markdown(folder) -> str:
    secret, pipe, big = folder / "secret.txt", folder / "pipe", folder / "big.bin"
    return (
        f"Look: ![passwd]({secret.as_uri()}) ![plain path]({secret}) ![relative](secret.txt) "
        f"![zero](file:///dev/zero) ![fifo]({pipe.as_uri()}) ![big]({big}) ![web](http://127.0.0.1:9/x.png) ![]({secret}) "
        f"![by reference][ref] <img src='{secret}'> <link rel=stylesheet href='{secret.as_uri()}'>\n\n"
        f"[ref]: {big.as_uri()}\n"
    )


def test_a_hostile_reply_from_a_server_is_shown_with_its_images_as_links_and_opens_no_file(qtbot, open_window, planted):
    folder, watch = planted
    reply = hostile_markdown(folder)
    chunks = [openai_chunk(role="assistant"), openai_chunk(reply), openai_chunk(finish="stop"), "[DONE]"]
    with ScriptedServer(Script(chunks=chunks)) as server:
        window = open_window()
        try:
            _connect(qtbot, window, server.url)
            trace = _ask(qtbot, window, "Show me a picture")
            shown = window.chat_panel.transcript.toPlainText()
            assert watch.opened() == []
            assert trace.text == reply  # the chat keeps the reply as it came
            for alt in ("passwd", "plain path", "relative", "zero", "fifo", "big", "web", "by reference"):
                assert f"[image: {alt}]" in shown
            assert f"<img src='{folder / 'secret.txt'}'>" in shown  # HTML in a reply is text
            follow_up = _ask(qtbot, window, "again")  # the window lives on, and the chat goes on
            assert follow_up.error is None
        finally:
            window.close()


def _race_header(qtbot, text):
    from gui.race.race_pane import RacePane

    pane = RacePane("A")
    qtbot.addWidget(pane)
    pane.begin(text, text, True, "PLAYBACK")  # a race file's side label and summary
    pane.show()
    return pane.header


def _chat_list_tooltip(qtbot, text):
    from core.chats.store import ChatSummary
    from gui.chats.chat_list import ChatListPanel

    chats = ChatListPanel()
    qtbot.addWidget(chats)
    chats.set_chats([ChatSummary("c1", text, "2026-01-01", 2)], None)  # an imported chat's title
    QToolTip.showText(QPoint(0, 0), chats.list.item(0).toolTip(), chats)
    return chats


def _model_tooltip(qtbot, text):
    from gui.untrusted_text import plain_tooltip

    QToolTip.showText(QPoint(0, 0), plain_tooltip(f"The server serves: {text}."))  # a server's model names


def _race_state(qtbot, text):
    from gui.race.race_pane import RacePane

    pane = RacePane("B")
    qtbot.addWidget(pane)
    pane.state_label.setText(f"failed: the server reported an error: {text}")
    pane.show()
    return pane


SINKS = [_race_header, _chat_list_tooltip, _model_tooltip, _race_state]


@pytest.mark.parametrize("show", SINKS, ids=[sink.__name__.strip("_") for sink in SINKS])
def test_html_in_a_label_or_tooltip_is_shown_as_text_and_opens_no_file(qtbot, planted, show):
    folder, watch = planted
    show(qtbot, f"<img src='{folder / 'secret.txt'}'> <img src='big.bin'>")
    QApplication.processEvents()  # a label lays itself out as it is shown
    QToolTip.hideText()
    assert watch.opened() == []
