"""Read a chat file only if it is a regular file of bounded size: never block on a FIFO or follow a link out."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from core.chats.record import ChatFileError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file(path: Path, limit: int, follow_links: bool = False) -> bytes:
    return read_regular_file_and_status(path, limit, follow_links)[0]


def read_regular_file_and_status(path: Path, limit: int, follow_links: bool = False) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its fstat, or ChatFileError saying what it is instead (a link, a FIFO, a device, too large).

    O_NONBLOCK keeps open() of a FIFO from waiting for a writer; fstat after opening checks the file
    actually opened, not a name that could have been swapped; at most limit + 1 bytes are ever read.
    OSError (permissions, a vanished file) is left to the caller.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        before = os.lstat(path)
        if not stat.S_ISREG(before.st_mode):
            raise ChatFileError(f"it is {kind_of(before.st_mode)}, not a regular file")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENXIO):  # a link (with O_NOFOLLOW), a socket
            raise ChatFileError("it is not a regular file") from None
        raise
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ChatFileError(f"it is {kind_of(status.st_mode)}, not a regular file")
        if status.st_size > limit:
            raise ChatFileError(f"the file is larger than {limit // 2**20} MB")
        chunks, remaining = [], limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise ChatFileError(f"the file is larger than {limit // 2**20} MB")  # it grew while being read
        return b"".join(chunks), status
    finally:
        os.close(descriptor)
