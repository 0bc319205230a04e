"""Read a chat file only if it is a regular file of bounded size (core/bounded_read.py), refused as a ChatFileError."""

from __future__ import annotations

import os
from pathlib import Path

from core.bounded_read import NotReadable
from core.bounded_read import read_regular_file_and_status as _read_bounded
from core.chats.record import ChatFileError


def read_regular_file(path: Path, limit: int, follow_links: bool = False) -> bytes:
    return read_regular_file_and_status(path, limit, follow_links)[0]


def read_regular_file_and_status(path: Path, limit: int, follow_links: bool = False) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its fstat, or ChatFileError saying what it is instead (a link, a FIFO, a device, too large).
    OSError (permissions, a vanished file) is left to the caller."""
    try:
        return _read_bounded(path, limit, follow_links)
    except NotReadable as refused:
        raise ChatFileError(str(refused)) from None
