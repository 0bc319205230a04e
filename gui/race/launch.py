"""Opening the race window from the chat: A is the chat's settings, B the same with streaming switched."""

from __future__ import annotations

from dataclasses import replace

from core.errors import InvalidSettingsError
from core.race.sides import RaceSide
from gui.race.race_window import RaceWindow


def race_window(window) -> RaceWindow:
    """The window's race window, made once and kept (closing it hides it)."""
    existing = getattr(window, "race_window", None)
    if existing is not None:
        return existing
    panel = window.chat_panel.settings_panel
    race = RaceWindow(
        window.models.client,
        window.budget_keeper,
        window,
        server_access=lambda: (panel.server_key, panel.server_timeout_s),
        trust_remote_code=window.models.trust_remote_code,
        allow_pickle=window.models.allow_pickle,
    )
    window.race_window = race
    return race


def open_race(window) -> RaceWindow:
    """Show the race window set up from the chat: its model and sampling on both sides, streaming on A and off on B
    (or the other way round), the message being typed (or the last one asked) as the prompt."""
    race = race_window(window)
    if not race.controller.running and race.controller.record is None:
        a = chat_side(window)
        b = replace(a, name="B", streaming=not a.streaming)
        prompt = window.chat_panel.input_box.message_text().strip() or _last_question(window)
        history = tuple((m.role, m.content) for m in window.session.messages)
        race.set_up(a, b, prompt or None, history, window.chat_panel.settings_panel.system_prompt.toPlainText())
    race.show()
    race.raise_()
    race.activateWindow()
    return race


def chat_side(window) -> RaceSide:
    panel = window.chat_panel.settings_panel
    try:
        settings = replace(panel.generation_settings(), prompt_cache=window.chat_panel.cache_toggle.isChecked())
    except InvalidSettingsError:
        settings = RaceSide("A").settings
    return RaceSide(
        "A",
        model=panel.model_spec(),
        dtype=panel.dtype(),
        streaming=window.chat_panel.streaming_toggle.isChecked(),
        settings=settings,
        server_timeout_s=panel.server_timeout_s,
    )


def _last_question(window) -> str:
    for message in reversed(window.session.messages):
        if message.role == "user":
            return message.content
    return ""
