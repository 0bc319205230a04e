"""While a model loads, glibc's heap serves blocks under 4 MiB itself (no mapping, and so no wait on the memory-map
lock, per block)."""

from __future__ import annotations

import ctypes
import os

import pytest

from core.model.load_heap import MMAP_THRESHOLD, heap_grown_in_large_steps

IS_MMAPPED = 0x2  # glibc's chunk header: the size word's bit for a block mapped on its own

pytestmark = pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc's allocator only"
)


def mapped_apart(size: int) -> bool:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    block = libc.malloc(size)
    assert block
    try:
        return bool(ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value & IS_MMAPPED)
    finally:
        libc.free(block)


def test_a_load_takes_blocks_under_the_threshold_from_the_heap():
    with heap_grown_in_large_steps():
        assert not mapped_apart(MMAP_THRESHOLD // 4)  # glibc's own default maps anything from 128 KiB
