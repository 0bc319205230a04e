"""Facts about this machine that a lab result depends on: CPU, cores, threads, memory."""

from __future__ import annotations

import os
import platform

from core.cpu import cpu_model_name
from core.lab.bandwidth import last_level_cache_bytes


def total_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# Below this share of its cores' time, a run was competing with other programs and its timings show it.
BUSY_CPU_SHARE = 0.75


def load_average() -> float | None:
    """The 1-minute load average, where the system reports one."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def contention_warning(machine: dict) -> str | None:
    """A sentence for the summary when the run got much less CPU than its threads asked for."""
    share = machine.get("cpu_share")
    if share is None or share >= BUSY_CPU_SHARE:
        return None
    start, end = (machine.get(key) for key in ("load_average_start", "load_average_end"))
    return (
        f"Warning: this run got only {share:.0%} of {machine.get('torch_threads')} cores' time (1-minute load "
        f"average {_average(start)} at the start, {_average(end)} at the end): other programs were using the CPU, so timings are slower and noisier than on an idle machine."
    )


def _average(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "unknown"


def describe_machine() -> dict:
    import torch

    return {
        "cpu": cpu_model_name(),
        "logical_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "memory_bytes": total_memory_bytes(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def machine_summary(machine: dict, bandwidth: dict | None) -> str:
    """One line for a results table or the Lab tab: CPU, cores, memory, cache and measured bandwidth."""
    parts = [
        machine.get("cpu") or "unknown CPU",
        f"{machine.get('logical_cores')} logical cores ({machine.get('torch_threads')} torch threads)",
    ]
    if machine.get("memory_bytes"):
        parts.append(f"{machine['memory_bytes'] / 2**30:.1f} GiB RAM")
    if machine.get("last_level_cache_bytes"):
        parts.append(f"{machine['last_level_cache_bytes'] / 2**20:.0f} MiB last-level cache")
    if bandwidth:
        parts.append(
            f"memory read bandwidth {bandwidth['bytes_per_s'] / 1e9:.1f} GB/s "
            f"(median pass {bandwidth['median_bytes_per_s'] / 1e9:.1f} GB/s)"
        )
    return ", ".join(parts)
