"""An API key as it enters (environment, dialog, engine request): trimmed, checked, and never put into a message."""

from __future__ import annotations

import os

from core.errors import InvalidSettingsError

API_KEY_VARIABLE = "LATENCYLAB_API_KEY"


def checked_api_key(raw: str | None, where: str = "the API key") -> str | None:
    """The key with surrounding whitespace taken off (a key file saved with Windows line endings ends in \\r\\n), or
    None when nothing is left. A key that still holds a control or non-ASCII character cannot go into an HTTP header:
    InvalidSettingsError says so, naming the character's position and kind, never the key."""
    if raw is None:
        return None
    key = raw.strip()
    for position, character in enumerate(key, start=1):
        if not character.isascii():
            kind = "a character that is not ASCII"
        elif not character.isprintable():
            kind = "a line break" if character in "\r\n" else "a control character"
        else:
            continue
        raise InvalidSettingsError(
            f"{where} holds {kind} (character {position} of {len(key)}), which an HTTP header cannot carry; "
            "copy the key again from where it was issued."
        )
    return key or None


def api_key_from_environment() -> str | None:
    return checked_api_key(os.environ.get(API_KEY_VARIABLE), API_KEY_VARIABLE)
