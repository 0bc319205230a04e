"""Refuse out-of-range settings from outside the form (saved preferences, opened chats) with a message.

The spin boxes would silently clamp such values; a refused value is replaced by the default instead,
and the user is told which one and why.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox, QSpinBox

from core.errors import InvalidSettingsError
from core.settings import PROXY_PORT, GenerationSettings, validate_dtype
from gui.settings.panel import SettingsPanel
from gui.settings.store import WindowSettings

SAMPLING_FIELDS = ("max_new_tokens", "temperature", "top_p", "draft_tokens")


def check_window_settings(settings: WindowSettings) -> list[str]:
    """Fix settings in place; return one message per refused value."""
    problems = []
    defaults = WindowSettings()
    try:
        validate_dtype(settings.dtype)
    except InvalidSettingsError as error:
        problems.append(f"Saved setting refused: {error} Using {defaults.dtype}.")
        settings.dtype = defaults.dtype
    for name in SAMPLING_FIELDS:
        message = _sampling_problem(name, getattr(settings, name))
        if message:
            problems.append(f"Saved setting refused: {message} Using {getattr(defaults, name)}.")
            setattr(settings, name, getattr(defaults, name))
    # A draft model's speculation is checked with its file: without one it is refused.
    message = _sampling_problem("speculation", settings.speculation, draft_model=settings.draft_model or None)
    if message:
        problems.append(f"Saved setting refused: {message} Using {defaults.speculation}.")
        settings.speculation = defaults.speculation
    try:
        PROXY_PORT.check(settings.proxy_port)
    except InvalidSettingsError as error:
        problems.append(f"Saved setting refused: {error} Using {defaults.proxy_port}.")
        settings.proxy_port = defaults.proxy_port
    if settings.seed is not None and _sampling_problem("seed", settings.seed):
        problems.append(f"Saved setting refused: {_sampling_problem('seed', settings.seed)} Using a random seed.")
        settings.seed = None
    return problems


def apply_chat_settings(panel: SettingsPanel, saved: dict) -> list[str]:
    """Put a reopened chat's sampling and speculation settings into the form; refuse the invalid ones."""
    problems = []
    widgets: dict[str, QSpinBox | QDoubleSpinBox] = {
        "max_new_tokens": panel.max_new_tokens,
        "temperature": panel.temperature,
        "top_p": panel.top_p,
        "draft_tokens": panel.speculation.drafts,
    }
    for name, widget in widgets.items():
        if name not in saved:
            continue
        message = _sampling_problem(name, saved[name])
        if message:
            problems.append(f"This chat's setting was refused: {message} Keeping {widget.value():g}.")
        else:
            widget.setValue(saved[name])
    if "speculation" in saved:
        fields = panel.speculation
        draft_model = saved.get("draft_model")
        message = _sampling_problem("speculation", saved["speculation"], draft_model=draft_model)
        if message:
            problems.append(f"This chat's setting was refused: {message} Keeping {fields.speculation()}.")
        else:
            fields.set_values(saved["speculation"], fields.draft_tokens(), draft_model)
    if "seed" in saved:
        seed = saved["seed"]
        message = _sampling_problem("seed", seed) if seed is not None else None
        if message:
            problems.append(f"This chat's setting was refused: {message} Keeping the current seed.")
        else:
            panel.seed.setValue(seed)
    return problems


def _sampling_problem(name: str, value, **together) -> str | None:
    """Why core refuses value for name (with the settings it is checked together with), or None."""
    try:
        GenerationSettings(**{name: value}, **together)
    except InvalidSettingsError as error:
        return str(error)
    except TypeError as error:
        return f"{name} has an unusable value {value!r} ({error})."
    return None
