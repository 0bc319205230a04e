"""The File menu as a user clicks it: every export writes its file and says so, whatever the action hands its slot."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QFileDialog

from tests.support.window_driving import ask

pytestmark = pytest.mark.model


def test_every_export_in_the_file_menu_writes_its_file(qtbot, window, tmp_path, monkeypatch):
    """File → Export chat… wrote nothing and printed a traceback: the action's `checked` reached it as the chat id."""
    ask(qtbot, window, "Say hi.", max_new_tokens=4)
    chosen = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_, **__: (str(chosen[-1]), ""))
    (file_menu,) = [menu.menu() for menu in window.menuBar().actions() if menu.text() == "&File"]
    exports = [action for action in file_menu.actions() if action.text().startswith("E")]
    assert len(exports) == 4
    said = []
    window.statusBar().messageChanged.connect(said.append)
    for number, action in enumerate(exports):
        kind = next((kind for kind in ("PNG", "CSV") if kind in action.text()), "JSON").lower()
        chosen.append(tmp_path / f"export-{number}.{kind}")
        action.trigger()
        assert chosen[-1].stat().st_size > 0, action.text()
        assert f"Saved {chosen[-1].name}." in said, (action.text(), said)
    chat = json.loads(chosen[0].read_text(encoding="utf-8"))
    assert [message["content"] for message in chat["messages"]][0] == "Say hi."


def test_the_chat_lists_export_writes_the_chat_it_was_asked_for(qtbot, window, tmp_path, monkeypatch):
    ask(qtbot, window, "Name a tree.", max_new_tokens=4)
    first = window.saved_chats.current_chat_id
    window.new_chat()
    target = tmp_path / "first.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_, **__: (str(target), ""))
    window.saved_chats.chat_list.export_requested.emit(first)  # its context menu, on a chat that is not open
    assert json.loads(target.read_text(encoding="utf-8"))["messages"][0]["content"] == "Name a tree."
