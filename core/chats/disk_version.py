"""What a chat file looked like when this process last read or wrote it, to notice another process's writes."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class DiskVersion:
    """Identity (inode, mtime, size) to skip re-reading an untouched file, and a digest of its bytes."""

    inode: int
    mtime_ns: int
    size: int
    digest: bytes

    @classmethod
    def of(cls, data: bytes, status: os.stat_result) -> DiskVersion:
        return cls(status.st_ino, status.st_mtime_ns, status.st_size, digest(data))

    def same_identity(self, status: os.stat_result) -> bool:
        return (self.inode, self.mtime_ns, self.size) == (status.st_ino, status.st_mtime_ns, status.st_size)


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()
