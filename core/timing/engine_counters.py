"""The engine's own counters over a reply, per token: major page faults, preemptions, garbage collections and packing."""

from __future__ import annotations

import gc
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

# A reply keeps at most this many garbage-collection pauses: a reply that collects more often than this is
# explained by the first ones, and a saved chat stays small.
MAX_GC_PAUSES = 256


class EngineCounters:
    """Watches this process from a reply's start to its end: getrusage's fault and switch counts, read once per token
    on the generating thread (a syscall of about a microsecond), and gc's own start and stop callbacks.

    Per token i the counts are those since token i - 1 (token 0: since the reply's compute began, so its prefill).
    Faults and switches are the whole process's, every thread: the engine's process computes nothing else.
    """

    def __init__(self, packing_callbacks: list[Callable[[int, int], None]] | None = None) -> None:
        """packing_callbacks: where the kernels tell of a pass that waited for packing (core/kernels/pauses.py)."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self._first = usage
        self._first_read = disk_read_bytes()
        self._first_machine = machine_busy_s()
        self._first_own = usage.ru_utime + usage.ru_stime
        self._last_faults, self._last_switches = usage.ru_majflt, usage.ru_nivcsw
        self.token_major_faults: list[int] = []
        self.token_preemptions: list[int] = []
        self.gc_pauses: list[tuple[int, int]] = []  # (start, duration), perf_counter_ns
        self._gc_started_ns: int | None = None
        gc.callbacks.append(self._on_gc)
        self.packing_pauses: list[tuple[int, int]] = []  # (start, duration), perf_counter_ns
        self._packing_callbacks = packing_callbacks
        if packing_callbacks is not None:
            packing_callbacks.append(self._on_packing)

    def _on_packing(self, started_ns: int, took_ns: int) -> None:
        if len(self.packing_pauses) < MAX_GC_PAUSES:
            self.packing_pauses.append((started_ns, took_ns))

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started_ns = time.perf_counter_ns()
        elif self._gc_started_ns is not None and len(self.gc_pauses) < MAX_GC_PAUSES:
            self.gc_pauses.append((self._gc_started_ns, time.perf_counter_ns() - self._gc_started_ns))
            self._gc_started_ns = None

    def token(self) -> None:
        """A token was made: what the process counted since the last one."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.token_major_faults.append(usage.ru_majflt - self._last_faults)
        self.token_preemptions.append(usage.ru_nivcsw - self._last_switches)
        self._last_faults, self._last_switches = usage.ru_majflt, usage.ru_nivcsw

    def stop(self) -> dict:
        """Stop watching; the totals over the reply and the per-token lists, as CpuUsage's fields take them."""
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._packing_callbacks is not None and self._on_packing in self._packing_callbacks:
            self._packing_callbacks.remove(self._on_packing)
        usage, first = resource.getrusage(resource.RUSAGE_SELF), self._first
        read, machine = disk_read_bytes(), machine_busy_s()
        own = usage.ru_utime + usage.ru_stime - self._first_own
        others = None
        if machine is not None and self._first_machine is not None:
            others = max(machine - self._first_machine - own, 0.0)  # /proc/stat's ticks are 10 ms: never below 0
        return {
            "memory_available_bytes": memory_available_bytes(),
            "others_cpu_s": others,
            "cores": len(os.sched_getaffinity(0)),
            "disk_read_bytes": read - self._first_read if read is not None and self._first_read is not None else None,
            "major_faults": usage.ru_majflt - first.ru_majflt,
            "minor_faults": usage.ru_minflt - first.ru_minflt,
            "preemptions": usage.ru_nivcsw - first.ru_nivcsw,
            "token_major_faults": self.token_major_faults,
            "token_preemptions": self.token_preemptions,
            "gc_pauses": self.gc_pauses,
            "packing_pauses": self.packing_pauses,
        }


def disk_read_bytes(io: Path = Path("/proc/self/io")) -> int | None:
    """Bytes this process has caused to be read from storage (Linux's read_bytes: a page fault's read-ahead included,
    which reads megabytes a fault); None where the kernel does not say."""
    try:
        for line in io.read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def machine_busy_s(stat: Path = Path("/proc/stat")) -> float | None:
    """Seconds every CPU of the machine has spent busy since boot (user, nice, system, irq, softirq, steal): less
    this process's own over a reply, what other programs took. None where the kernel does not say."""
    try:
        fields = stat.read_text().splitlines()[0].split()
        if fields[0] != "cpu":
            return None
        values = [int(value) for value in fields[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return sum(values[index] for index in (0, 1, 2, 5, 6, 7) if index < len(values)) / os.sysconf("SC_CLK_TCK")


def memory_available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """What the kernel says could be given to programs without swapping (MemAvailable); None where it does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
