"""Every open of a file in one folder by this process's code, C++ included, seen through Linux's inotify."""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

import pytest

IN_OPEN = 0x20
_EVENT_HEADER = struct.Struct("iIII")  # watch descriptor, mask, cookie, name length


class OpenWatch:
    """opened() lists the names opened in folder since the watch began (Qt's QFile never passes through Python)."""

    def __init__(self, folder: Path):
        libc = ctypes.CDLL(None, use_errno=True)
        if not hasattr(libc, "inotify_init1"):
            pytest.skip("inotify is Linux's: this system has none")
        self._descriptor = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self._descriptor < 0 or libc.inotify_add_watch(self._descriptor, os.fsencode(folder), IN_OPEN) < 0:
            pytest.skip(f"inotify could not watch {folder}: {os.strerror(ctypes.get_errno())}")

    def opened(self) -> list[str]:
        names: list[str] = []
        while True:
            try:
                data = os.read(self._descriptor, 65536)
            except BlockingIOError:
                return names
            offset = 0
            while offset < len(data):
                _, _, _, length = _EVENT_HEADER.unpack_from(data, offset)
                start = offset + _EVENT_HEADER.size
                names.append(os.fsdecode(data[start : start + length].rstrip(b"\0")))
                offset = start + length

    def close(self) -> None:
        os.close(self._descriptor)

    def __enter__(self) -> OpenWatch:
        return self

    def __exit__(self, *_) -> None:
        self.close()
