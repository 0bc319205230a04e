"""Other programs' load right now: /proc/stat's busy time over a short probe less this process's own, and the
processes that used it (/proc/PID/stat), busiest first."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from core.doctor.check import INFO, OK, WARN, Check
from core.roofline.machine_load import LoadProbe, read_own_busy
from core.timing.cpu_share import WAIT_POLICY_ADVICE
from core.timing.engine_counters import machine_busy_s

PROC = Path("/proc")
PROBE_S = 0.5
# The engine's threads step together, so the slowest sets the pace: a quarter of one core taken from them already
# shows in TPOT. Cores the engine does not compute on are free to take first.
BUSY_CORES = 0.25
TOP_PROCESSES = 3
SHOWN_CORES = 0.05  # a process using less than this over the probe is not worth a line


@dataclass(frozen=True)
class OtherLoad:
    others_cores: float | None  # cores' worth of CPU other programs used over the probe; None where unreadable
    seconds: float
    top: list[tuple[str, int, float]] = field(default_factory=list)  # (name, pid, cores), busiest first


def process_cpu_ticks(proc: Path = PROC) -> dict[int, tuple[str, int]]:
    """pid -> (its name, user + system clock ticks so far) for every process whose stat can be read."""
    found: dict[int, tuple[str, int]] = {}
    try:
        entries = [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return found
    for entry in entries:
        try:
            text = (proc / entry / "stat").read_text(errors="replace")
            name = text[text.index("(") + 1 : text.rindex(")")]  # a name may hold spaces and parentheses itself
            fields = text[text.rindex(")") + 2 :].split()
            found[int(entry)] = (name, int(fields[11]) + int(fields[12]))  # utime and stime, fields 14 and 15
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def busiest(
    before: dict, after: dict, seconds: float, own_pid: int, ticks_per_s: float
) -> list[tuple[str, int, float]]:
    """The processes that used the most CPU between the two readings, as (name, pid, cores)."""
    used = []
    for pid, (name, ticks) in after.items():
        if pid == own_pid or pid not in before or before[pid][0] != name:
            continue  # ours, or new since the first reading (its pid may be another's reused)
        cores = (ticks - before[pid][1]) / ticks_per_s / seconds
        if cores >= SHOWN_CORES:
            used.append((name, pid, cores))
    return sorted(used, key=lambda item: -item[2])[:TOP_PROCESSES]


def measure_other_load(
    seconds: float = PROBE_S,
    stat: Path = PROC / "stat",
    proc: Path = PROC,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.perf_counter,
    own_busy: Callable[[], float] = read_own_busy,
) -> OtherLoad:
    """What other programs used while this process slept for `seconds` (its own use is subtracted all the same)."""
    cores = os.cpu_count() or 1
    before = process_cpu_ticks(proc)
    started = clock()
    with LoadProbe(machine_busy=partial(machine_busy_s, stat), own_busy=own_busy, clock=clock, cores=cores) as probe:
        sleep(seconds)
    wall = clock() - started
    after = process_cpu_ticks(proc)
    try:
        ticks_per_s = float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError):
        ticks_per_s = 100.0
    top = busiest(before, after, wall, os.getpid(), ticks_per_s) if wall > 0 else []
    share = probe.others_share
    return OtherLoad(None if share is None else share * cores, wall, top)


def load_check(load: OtherLoad, usable: int | None, threads: int | None) -> Check:
    if load.others_cores is None:
        return Check("load", "unknown (/proc/stat could not be read)", {"seconds": load.seconds}, INFO)
    spare = max(0, (usable or 0) - (threads or usable or 0))
    limit = spare + BUSY_CORES
    value = {
        "others_cores": round(load.others_cores, 3),
        "seconds": round(load.seconds, 3),
        "limit_cores": limit,
        "top": [{"name": name, "pid": pid, "cores": round(cores, 3)} for name, pid, cores in load.top],
    }
    of = f" of {usable}" if usable else ""
    figure = f"other programs used {load.others_cores:.2f} cores{of} over {load.seconds:.1f} s"
    if load.top:
        figure += ": " + ", ".join(f"{name} (pid {pid}) {cores:.2f}" for name, pid, cores in load.top)
    if load.others_cores <= limit:
        return Check("load", figure, value, OK)
    if not load.top:
        figure += " (by processes not visible from here, or too short-lived to be named)"
    names = ", ".join(name for name, _, _ in load.top) or "the busy programs"
    advice = f"close or pause {names}: they take the cores the engine computes on"
    if os.environ.get("OMP_WAIT_POLICY", "").strip().upper() != "PASSIVE":
        advice += f"; or, {WAIT_POLICY_ADVICE}"
    return Check("load", figure, value, WARN, advice)
