"""Facts about this machine that a lab result depends on: CPU, cores, threads, memory."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from core.lab.bandwidth import last_level_cache_bytes


def cpu_model_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def total_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


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
    parts = [machine.get("cpu") or "unknown CPU",
             f"{machine.get('logical_cores')} logical cores ({machine.get('torch_threads')} torch threads)"]
    if machine.get("memory_bytes"):
        parts.append(f"{machine['memory_bytes'] / 2**30:.1f} GiB RAM")
    if machine.get("last_level_cache_bytes"):
        parts.append(f"{machine['last_level_cache_bytes'] / 2**20:.0f} MiB last-level cache")
    if bandwidth:
        parts.append(f"memory read bandwidth {bandwidth['bytes_per_s'] / 1e9:.1f} GB/s "
                     f"(median pass {bandwidth['median_bytes_per_s'] / 1e9:.1f} GB/s)")
    return ", ".join(parts)
