"""The process's one thread for torch work, so that loading and every generation share one OpenMP pool.

libgomp gives each thread that enters a parallel region a pool of its own, and once a process holds
more pool threads than there are cores it stops spinning between regions. Decode is thousands of
short regions, so a second pool made int4 decode here 1.8x slower (17 -> 30 ms a token) even while
that pool sat idle: a model loaded on one thread and generating on another was enough
(benchmarks/one_pool.py). Keeping one thread for all of it is the whole fix.
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from core.generation_thread import GenerationThread

T = TypeVar("T")
COMPUTE_THREAD_NAME = "latencylab-compute"

_lock = threading.Lock()
_shared: GenerationThread | None = None


def compute_thread() -> GenerationThread:
    """The shared thread, started on first use (and again if something closed it)."""
    global _shared
    with _lock:
        if _shared is None or _shared.closed or not _shared.alive:
            _shared = GenerationThread(COMPUTE_THREAD_NAME)
        return _shared


def on_compute_thread(function: Callable[[], T], timeout: float | None = None) -> T:
    """Run function on the compute thread (directly when already there) and return its result."""
    return compute_thread().call(function, timeout)
