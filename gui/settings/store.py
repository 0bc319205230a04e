"""Window settings that survive a restart, kept in QSettings."""

from __future__ import annotations

from dataclasses import dataclass, fields

from PySide6.QtCore import QSettings


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
    for field in fields(WindowSettings):
        store.setValue(field.name, getattr(settings, field.name))
    store.sync()


def _coerce(raw, kind):
    if kind is bool:
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes")
    return kind(raw)
