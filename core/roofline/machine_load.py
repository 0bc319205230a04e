"""How much of the CPU other programs used while we measured: /proc/stat's busy time less this process's own."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.timing.engine_counters import machine_busy_s

# Above this share of the machine's cores, taken by other programs during a measurement, its figure is flagged
# as measured under load and not cached (the example: a read loop gave 7.8 GB/s under load, 31 quiet).
BUSY_LIMIT = 0.10


def read_own_busy() -> float:
    """Seconds this process (all its threads) has spent on a CPU."""
    times = os.times()
    return times.user + times.system


@dataclass
class LoadProbe:
    """Brackets a measurement: others_share is the share of all cores that other programs used meanwhile."""

    machine_busy: Callable[[], float | None] = machine_busy_s
    own_busy: Callable[[], float] = read_own_busy
    clock: Callable[[], float] = time.perf_counter
    cores: int = os.cpu_count() or 1
    others_share: float | None = None

    def __enter__(self) -> LoadProbe:
        self._start = (self.machine_busy(), self.own_busy(), self.clock())
        return self

    def __exit__(self, *exc) -> None:
        machine, own, wall = self.machine_busy(), self.own_busy(), self.clock()
        if machine is None or self._start[0] is None or wall <= self._start[2]:
            self.others_share = None
            return
        others = (machine - self._start[0]) - (own - self._start[1])
        self.others_share = max(0.0, others / ((wall - self._start[2]) * self.cores))

    @property
    def loaded(self) -> bool:
        return self.others_share is not None and self.others_share > BUSY_LIMIT
