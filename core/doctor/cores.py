"""The cores this process may run on and the threads the engine computes with (torch's, which the kernels share)."""

from __future__ import annotations

import os
from pathlib import Path

from core.doctor.check import INFO, OK, WARN, Check

SYS_CPU = Path("/sys/devices/system/cpu")


def usable_cpus() -> set[int] | None:
    """The CPUs this process may run on (sched_getaffinity: taskset, a container's cpuset), or None elsewhere."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def physical_cores(cpus: set[int], sys_cpu: Path = SYS_CPU) -> int | None:
    """How many physical cores those CPUs are: hyperthreads of one core share its sibling list. None where Linux does
    not say for every one of them."""
    siblings = set()
    for cpu in cpus:
        try:
            siblings.add((sys_cpu / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            return None
    return len(siblings) or None


def engine_threads() -> int | None:
    """torch's thread count in this process, which the engine inherits: OMP_NUM_THREADS where set, else torch's own
    choice (the physical cores)."""
    try:
        import torch

        return torch.get_num_threads()
    except Exception:  # noqa: BLE001 - torch missing or broken: the figure is then unknown, the rest still checked
        return None


def cores_check(
    cpus: set[int] | None = None, threads: int | None = None, physical: int | None = None, logical: int | None = None
) -> Check:
    cpus = usable_cpus() if cpus is None else cpus
    threads = engine_threads() if threads is None else threads
    logical = os.cpu_count() if logical is None else logical
    usable = len(cpus) if cpus else None
    physical = physical if physical is not None else (physical_cores(cpus) if cpus else None)
    value = {"usable_cpus": usable, "machine_cpus": logical, "physical_cores": physical, "engine_threads": threads}
    if usable is None or threads is None:
        known = f"{usable} usable CPUs" if usable else f"{threads} engine threads" if threads else "nothing"
        return Check("cores", f"unknown ({known} could be read)", value, INFO)
    cores = f"{usable} usable of {logical}" if logical and logical != usable else f"{usable} usable"
    if physical and physical != usable:
        cores += f" ({physical} physical)"
    figure = f"{cores} CPUs; the engine computes with {threads} thread{'s' if threads != 1 else ''}"
    if threads > usable:
        return Check(
            "cores",
            figure,
            value,
            WARN,
            f"the engine's {threads} threads share {usable} CPUs, so they wait on each other at every step: set "
            f"OMP_NUM_THREADS={physical or usable} (or leave it unset)",
        )
    if threads < (physical or usable):
        return Check(
            "cores",
            figure,
            value,
            INFO,
            f"the engine uses {threads} of {physical or usable} cores; decode is usually bound by memory, but prefill "
            f"is not: OMP_NUM_THREADS={physical or usable} (or unset) lets it use them all",
        )
    return Check("cores", figure, value, OK)
