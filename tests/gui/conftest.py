"""The window's fixtures: a window with no model, one on the tiny model, and one waiting for a held load."""

from __future__ import annotations

import pytest


@pytest.fixture
def bare_window(open_window):
    """A chat window with no model: for what the window does before (or without) one."""
    return open_window()


@pytest.fixture
def tiny_window(open_window, tiny_model):
    """A chat window on the in-process engine with the tiny random model: fast replies of a few tokens."""
    win = open_window(tiny_model, show=False)
    win.chat_panel.settings_panel.max_new_tokens.setValue(5)
    win.show()
    return win


@pytest.fixture
def waiting_for_a_load(open_window, held_load):
    """A window whose model load is held (held_load): messages sent now queue behind it."""
    win = open_window(show=False)
    win.start_loading("embedded", "float32")
    assert held_load.inside.wait(30)
    yield win
    held_load.release.set()
    win.close()
