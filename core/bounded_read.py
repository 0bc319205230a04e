"""Read a file only if it is a regular file of bounded size: never block on a FIFO, never read a device without end.

Every file a user names (a chat to import, `race --history`, a trace or race to replay, saved lab results) and every
file in the chats folder is read here, so a named pipe, /dev/zero or a file larger than its kind ever is, is refused
in one line before a byte of it is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from core.errors import LatencyLabError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotReadable(LatencyLabError):
    """The file is not a regular file, or larger than its kind may be; the message says which, without the path."""


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file_and_status(path: Path, limit: int, follow_links: bool = False) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its fstat, or NotReadable saying what it is instead (a link, a FIFO, a device, too large).

    O_NONBLOCK keeps open() of a FIFO from waiting for a writer; fstat after opening checks the file
    actually opened, not a name that could have been swapped; at most limit + 1 bytes are ever read.
    OSError (permissions, a vanished file) is left to the caller.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode):
            raise NotReadable(f"it is {kind_of(before.st_mode)}, not a regular file")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):  # a link (with O_NOFOLLOW), a socket
            raise NotReadable("it is not a regular file") from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise NotReadable(f"it is {kind_of(status.st_mode)}, not a regular file")
        if status.st_size > limit:
            raise NotReadable(f"the file is larger than {_size(limit)}")
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise NotReadable(f"the file is larger than {_size(limit)}")  # it grew while being read
        return b"".join(chunks), status
    finally:
        os.close(descriptor)


def read_named_file(path: str | Path, limit: int) -> bytes:
    """A file the user named (a link to one included: they chose it), or NotReadable saying in a few words why not:
    "it is a named pipe (FIFO), not a regular file", "the file is larger than 64 MB", "No such file or directory"."""
    try:
        return read_regular_file_and_status(Path(path), limit, follow_links=True)[0]
    except OSError as error:
        raise NotReadable(error.strerror or type(error).__name__) from None


def _size(limit: int) -> str:
    return f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit:,} bytes"
