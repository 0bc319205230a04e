"""glibc's heap grown in large steps while a model loads: the packing thread's page faults and the importing thread's
heap growth both take the process's memory-map lock, and the imports waited on it.

Each brk or mmap that grows the heap takes that lock for writing, and waits out every fault and populate of the
packing thread (which hold it for reading). torch's import grows the heap thousands of times in small steps; beside
the 7B shape's packing it took 2.0 s instead of 1.0, and a ready model came 2.9-3.3 s after launch. Growing the heap
64 MiB at a time, with blocks under 4 MiB taken from it rather than mapped one by one, it comes after 1.6 s
(benchmarks/cold_start.py, Xeon AMX, five alternated runs each).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

M_TOP_PAD = -2  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
LOAD_TOP_PAD = 64 << 20
USUAL_TOP_PAD = 128 << 10  # glibc's default: once loaded, a freed top is given back as before
# Fixed, where glibc would otherwise move it (any mallopt ends its own adjustment): the packed weights, tens of MiB a
# matrix, stay mapped apart and go back to the system when a model is closed.
MMAP_THRESHOLD = 4 << 20


@contextmanager
def heap_grown_in_large_steps() -> Iterator[None]:
    mallopt = _mallopt()
    if mallopt is None:  # not glibc (musl, macOS): its allocator is its own
        yield
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TOP_PAD, LOAD_TOP_PAD)
    try:
        yield
    finally:
        mallopt(M_TOP_PAD, USUAL_TOP_PAD)


def _mallopt():
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, ValueError, AttributeError):  # no such name to ask (not Linux), or no mallopt
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
