"""Hold huge pastes outside the message box: Qt lays out a long line again on every keystroke."""

from __future__ import annotations

import re

# Below this a paste, even as one line, lays out in about 20 ms with word wrapping (measured);
# a 1 MB line takes 0.3 s per keystroke, or 40 s with no spaces and Qt's default wrap mode.
LARGE_PASTE_CHARS = 50_000
_MARKER = re.compile(r"⟦pasted text #(\d+): [\d,]+ characters⟧")


class PasteHolder:
    """Keeps each large paste under a short marker; expand() puts the texts back where the markers stand."""

    def __init__(self):
        self._texts: dict[int, str] = {}
        self._next_id = 1

    def __len__(self) -> int:
        return len(self._texts)

    def hold(self, text: str) -> str:
        paste_id = self._next_id
        self._next_id += 1
        self._texts[paste_id] = text
        return f"⟦pasted text #{paste_id}: {len(text):,} characters⟧"

    def expand(self, visible: str) -> str:
        """Deleted markers are gone from the message; held texts stay until clear(), since undo may restore a marker."""
        if not self._texts:
            return visible
        return _MARKER.sub(lambda match: self._texts.get(int(match.group(1)), match.group(0)), visible)

    def clear(self) -> None:
        self._texts.clear()


def marker_ending_at(text: str, position: int) -> tuple[int, int] | None:
    """The span of a marker that ends exactly at position, so Backspace removes it whole."""
    for match in _MARKER.finditer(text, 0, position):
        if match.end() == position:
            return match.span()
    return None


def marker_starting_at(text: str, position: int) -> tuple[int, int] | None:
    match = _MARKER.match(text, position)
    return match.span() if match else None
