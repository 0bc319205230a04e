"""Zero-width break points in the displayed text of very long unbroken runs, and their removal on copy."""

from __future__ import annotations

import re

ZERO_WIDTH_SPACE = "\u200b"
# Runs shorter than this are left alone: they wrap at Qt's 'anywhere' fallback at little cost.
LONG_RUN_CHARS = 200
# A break opportunity about this often: Qt's 'word boundary, else anywhere' wrapping scans a whole
# word for each line it breaks, so an unbroken 50,000-character reply cost 335 ms to lay out once.
BREAK_EVERY = 64
_LONG_RUN = re.compile(rf"\S{{{LONG_RUN_CHARS},}}")
# Markdown or HTML that a break would change, not just wrap: links, URLs, tags and entities.
_MARKUP = ("://", "](", "<", "&")


def break_long_runs(markdown: str) -> str:
    """The text with a zero-width space between two letters or digits every BREAK_EVERY characters
    of a long run; only for display, never for the saved chat."""
    if len(markdown) < LONG_RUN_CHARS:
        return markdown
    return _LONG_RUN.sub(_break_run, markdown)


def _break_run(match: re.Match) -> str:
    run = match.group(0)
    if any(mark in run for mark in _MARKUP):
        return run
    pieces, since_break = [], 0
    for index, char in enumerate(run):
        # Only between two letters or digits, so no Markdown marker (**, _, `) is split.
        if since_break >= BREAK_EVERY and char.isalnum() and run[index - 1].isalnum():
            pieces.append(ZERO_WIDTH_SPACE)
            since_break = 0
        pieces.append(char)
        since_break += 1
    return "".join(pieces)


def without_breaks(text: str) -> str:
    return text.replace(ZERO_WIDTH_SPACE, "")
