"""Model and server text made safe for a terminal: control characters shown as symbols, never obeyed.

A reply or a server's model name is untrusted input. Written raw to a terminal, ESC [2J clears the screen, ESC ] 0;
sets the window's title and a carriage return overwrites what was printed; so where the stream is a terminal, each
control character but the line break and the tab is shown as its symbol from Unicode's Control Pictures block
(ESC as U+241B), and the C1 controls (which some terminals obey in UTF-8 too) as U+FFFD. Output to a file or a pipe
is the text as it came; lines written for people (the proxy's) are always made safe.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


def terminal_safe(text: str) -> str:
    return _CONTROLS.sub(_picture, text)


def for_stream(text: str, stream) -> str:
    """text as written to stream: made terminal-safe where the stream is a terminal."""
    try:
        interactive = stream.isatty()
    except (AttributeError, OSError, ValueError):
        interactive = False
    return terminal_safe(text) if interactive else text
