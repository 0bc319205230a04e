"""How much of a file is in the page cache now: mincore(2) over a read-only mapping of it, which touches no page.

A model's weights are memory-mapped, so pages not in the cache are read from disk as a reply first needs them.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from core.doctor.check import INFO, OK, WARN, Check, gigabytes

# Mapped and counted a window at a time: a 40 GB file's whole map would need a 10 MB vector, and under
# `ulimit -v` the address space for all of it at once.
WINDOW_BYTES = 1 << 30
# Below this share resident, the first reply pays for the rest of the file from disk.
WARM_SHARE = 0.9


@dataclass(frozen=True)
class Residency:
    resident_bytes: int
    size: int

    @property
    def fraction(self) -> float:
        return self.resident_bytes / self.size if self.size else 1.0


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return libc


def resident(path: Path) -> Residency | None:
    """The bytes of the file in the page cache now, or None where this cannot be asked (no mincore, no mapping)."""
    try:
        libc, page = _libc(), mmap.PAGESIZE
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            count = 0
            for offset in range(0, size, WINDOW_BYTES):
                length = min(WINDOW_BYTES, size - offset)
                window = _window_pages(libc, handle.fileno(), offset, length, page)
                if window is None:
                    return None
                count += window
    except (OSError, AttributeError, ValueError):
        return None
    return Residency(min(count * page, size), size)


def _window_pages(libc, fd: int, offset: int, length: int, page: int) -> int | None:
    """Resident pages of one window of the file (offset: a multiple of the page size)."""
    address = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if address in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        pages = (length + page - 1) // page
        vector = (ctypes.c_ubyte * pages)()
        if libc.mincore(address, length, vector) != 0:
            return None
        return sum(entry & 1 for entry in vector)
    finally:
        libc.munmap(address, length)


def page_cache_check(path: Path, residency: Residency | None) -> Check:
    if residency is None:
        return Check("page_cache", "unknown (mincore could not be asked here)", {"path": str(path)}, INFO)
    missing = residency.size - residency.resident_bytes
    value = {
        "path": str(path),
        "resident_bytes": residency.resident_bytes,
        "file_bytes": residency.size,
        "resident_fraction": round(residency.fraction, 4),
    }
    figure = (
        f"{residency.fraction:.0%} of {path.name} ({gigabytes(residency.size)}) is in the page cache"
        if residency.size
        else f"{path.name} is empty"
    )
    if residency.fraction >= WARM_SHARE:
        return Check("page_cache", figure, value, OK)
    return Check(
        "page_cache",
        figure,
        value,
        WARN,
        f"the first reply after loading reads the other {gigabytes(missing)} from disk (a slow first TTFT, "
        f"not the model's); later replies are warm while memory allows",
    )
