"""Window settings that survive a restart, kept in QSettings."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from PySide6.QtCore import QSettings

from core.chats.atomic_file import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE


@dataclass
class WindowSettings:
    model_spec: str = "embedded"
    dtype: str = "float32"
    system_prompt: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = -1  # -1: no fixed seed
    streaming: bool = True
    decode_loop: str = "lean"


def open_settings() -> QSettings:
    return QSettings("LatencyLab", "latencylab")


def load_window_settings(store: QSettings | None = None) -> WindowSettings:
    store = store or open_settings()
    defaults = WindowSettings()
    values = {}
    for field in fields(WindowSettings):
        default = getattr(defaults, field.name)
        raw = store.value(field.name, default)
        try:
            values[field.name] = _coerce(raw, type(default))
        except (TypeError, ValueError):
            values[field.name] = default  # a hand-edited or stale value must not stop the app
    return WindowSettings(**values)


def save_window_settings(settings: WindowSettings, store: QSettings | None = None) -> None:
    store = store or open_settings()
    folder = Path(store.fileName()).parent
    if not folder.exists():
        folder.mkdir(parents=True, mode=PRIVATE_DIR_MODE)  # created by us, so private, like the chats folder
    for field in fields(WindowSettings):
        store.setValue(field.name, getattr(settings, field.name))
    store.sync()
    make_private(Path(store.fileName()))


def make_private(path: Path) -> None:
    """The file holds the model path and the system prompt: readable by the user only (QSettings writes 0644)."""
    try:
        if os.name == "posix" and path.is_file() and path.stat().st_mode & 0o077:
            path.chmod(PRIVATE_FILE_MODE)
    except OSError:
        pass  # a settings file we cannot tighten is still better saved than lost


def _coerce(raw, kind):
    if kind is bool:
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
    return kind(raw)
