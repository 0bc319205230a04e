"""Window settings that survive a restart, kept in QSettings."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from core.atomic_file import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE
from core.model.source import EMBEDDED_SPEC
from core.settings import (
    DECODE_LOOP,
    DRAFT_TOKENS,
    DTYPE,
    MAX_NEW_TOKENS,
    PROXY_PORT,
    SEED,
    SPECULATION,
    TEMPERATURE,
    TOP_P,
)

# The default before native precision existed (issue #16).
OLD_DEFAULT_DTYPE = "float32"


@dataclass
class WindowSettings:
    """What the window restores at launch; the defaults are core's (core/settings.py)."""

    model_spec: str = EMBEDDED_SPEC
    dtype: str = DTYPE.default
    system_prompt: str = ""
    max_new_tokens: int = int(MAX_NEW_TOKENS.default)
    temperature: float = float(TEMPERATURE.default)
    top_p: float = float(TOP_P.default)
    seed: int | None = SEED.default  # None: a random seed, as in core
    streaming: bool = True
    prompt_cache: bool = True  # GenerationSettings.prompt_cache: reuse the chat's cached history
    decode_loop: str = DECODE_LOOP.default
    speculation: str = SPECULATION.default  # GenerationSettings.speculation: "off", or how drafts are made
    draft_tokens: int = int(DRAFT_TOKENS.default)
    draft_model: str = ""  # GenerationSettings.draft_model's file ("" for none: QSettings keeps no None)
    # True once the user picked a dtype in the form. A dtype never picked follows the default, so a new
    # default (native precision) reaches people whose saved settings only echo the old one.
    dtype_chosen: bool = False
    settings_folded: bool = False  # the settings folded away, to give the chat their room
    proxy_upstream: str = ""  # the Traffic tab's server ("" until one is given)
    proxy_port: int = int(PROXY_PORT.default)


def open_settings() -> QSettings:
    return QSettings("LatencyLab", "latencylab")


def load_window_settings(store: QSettings | None = None) -> WindowSettings:
    store = store or open_settings()
    defaults = WindowSettings()
    values: dict[str, Any] = {}  # each field's own type, coerced below
    for field in fields(WindowSettings):
        default = getattr(defaults, field.name)
        raw = store.value(field.name, default)
        try:
            values[field.name] = _seed(raw) if field.name == "seed" else _coerce(raw, type(default))
        except (TypeError, ValueError):
            values[field.name] = default  # a hand-edited or stale value must not stop the app
    if not store.contains("dtype_chosen"):
        # Saved by a version that did not record the choice: float32, the old default, is taken as never
        # chosen; any other dtype could only have been picked.
        values["dtype_chosen"] = values["dtype"] != OLD_DEFAULT_DTYPE
    if not values["dtype_chosen"]:
        values["dtype"] = defaults.dtype
    return WindowSettings(**values)


def save_window_settings(settings: WindowSettings, store: QSettings | None = None) -> str | None:
    """Write the settings; None when saved, else why not in one line (a read-only config folder, a file in its
    place): the caller says so, and nothing else is lost."""
    store = store or open_settings()
    folder = Path(store.fileName()).parent
    try:
        if not folder.exists():
            folder.mkdir(parents=True, mode=PRIVATE_DIR_MODE)  # created by us, so private, like the chats folder
    except OSError as error:
        return f"the window's settings could not be saved in {folder} ({error.strerror or type(error).__name__})"
    for field in fields(WindowSettings):
        value = getattr(settings, field.name)
        store.setValue(field.name, "" if value is None else value)
    store.sync()
    if store.status() != QSettings.Status.NoError:
        return f"the window's settings could not be saved in {store.fileName()} (it cannot be written)"
    make_private(Path(store.fileName()))
    return None


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


def _seed(raw) -> int | None:
    """'' (or -1, how older versions stored it) is a random seed."""
    if raw is None or str(raw).strip() in ("", "-1"):
        return None
    return int(raw)
