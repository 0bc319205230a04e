"""One long-lived thread that runs every model.generate of a session, one job at a time.

torch's OpenMP pool belongs to the thread that calls it: a new thread per reply builds a new pool,
and two pools alternating on two cores slowed decode about 2x here. Reusing one thread avoids both.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable


class GenerationThread:
    def __init__(self, name: str = "latencylab-generate"):
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def call(self, function: Callable[[], object], timeout: float | None = None) -> object:
        """Run function on this thread and return its result (for benchmarks that must share the pool)."""
        done = threading.Event()
        outcome: dict = {}

        def job() -> None:
            try:
                outcome["value"] = function()
            except BaseException as error:  # noqa: BLE001 - handed back to the caller below
                outcome["error"] = error
            finally:
                done.set()

        self.submit(job)
        if not done.wait(timeout):
            raise TimeoutError("the generation thread did not finish the call in time")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def close(self, timeout: float | None = None) -> bool:
        """Finish the current job, then end the thread; True when it has ended."""
        self._jobs.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()
