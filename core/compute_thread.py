"""The process's one thread for torch work: every load and every reply, one job at a time, on one OpenMP pool.

libgomp gives each thread that enters a parallel region a pool of its own, and once a process holds
more pool threads than there are cores it stops spinning between regions. Decode is thousands of
short regions, so a second pool made int4 decode here 1.8x slower (17 -> 30 ms a token) even while
that pool sat idle: a model loaded on one thread and generating on another was enough
(benchmarks/one_pool.py). Keeping one thread for all of it is the whole fix.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
COMPUTE_THREAD_NAME = "latencylab-compute"


class ComputeThread:
    """A long-lived thread that runs submitted jobs in order. The process shares one (compute_thread())."""

    def __init__(self, name: str = COMPUTE_THREAD_NAME):
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._closed:
                # Queued behind the end marker, the job would never run and its caller would wait forever.
                raise RuntimeError(f"{self._thread.name} is closed and takes no more work")
            self._jobs.put(job)

    def call(self, function: Callable[[], T], timeout: float | None = None) -> T:
        """Run function on this thread and return its result, or raise what it raised."""
        if self.is_current():
            return function()  # a job that calls back in would otherwise wait for itself
        # A bare lock, released when the job is done: Ctrl+C in an Event's wait (its Condition) could leave that
        # lock released twice, and `ask` ended with "RuntimeError: release unlocked lock" and a traceback instead of
        # "stopped (Ctrl+C)" when the signal came just as the model was ready. A bare lock's wait is interrupted whole.
        done = threading.Lock()
        done.acquire()
        outcome: dict = {}

        def job() -> None:
            try:
                outcome["value"] = function()
            except BaseException as error:  # noqa: BLE001 - handed back to the caller below
                outcome["error"] = error
            finally:
                done.release()

        self.submit(job)
        if not done.acquire(timeout=-1 if timeout is None else timeout):
            raise TimeoutError(f"{self._thread.name} did not finish the call in time")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def close(self, timeout: float | None = None) -> bool:
        """Finish the queued jobs, then end the thread; True when it has ended."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._jobs.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def is_current(self) -> bool:
        return threading.get_ident() == self._thread.ident

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def closed(self) -> bool:
        return self._closed

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()
            # The finished job's closure holds its result (a whole model, after a load) until the next
            # job arrives; let it go now.
            del job


_lock = threading.Lock()
_shared: ComputeThread | None = None


def compute_thread() -> ComputeThread:
    """The shared thread, started on first use (and again if something closed it)."""
    global _shared
    with _lock:
        if _shared is None or _shared.closed or not _shared.alive:
            _shared = ComputeThread(COMPUTE_THREAD_NAME)
        return _shared


def on_compute_thread(function: Callable[[], T], timeout: float | None = None) -> T:
    """Run function on the compute thread (directly when already there) and return its result."""
    return compute_thread().call(function, timeout)
