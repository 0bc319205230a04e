"""Whether a file the command will write can be written, checked before the work rather than after it."""

from __future__ import annotations

import os
from pathlib import Path


def output_problem(path: str) -> str | None:
    """Why path could not be written (a folder, a missing or read-only folder), said before the work starts."""
    target = Path(path)
    if target.is_dir():
        return "is a folder; give a file name"
    if not target.parent.is_dir():
        return "its folder does not exist"
    if not os.access(target.parent, os.W_OK):
        return "its folder cannot be written"
    return None
