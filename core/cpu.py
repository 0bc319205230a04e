"""This CPU as Linux describes it in /proc/cpuinfo: its model name and feature flags, what builds are keyed by."""

from __future__ import annotations

import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: Path = CPUINFO) -> tuple[str, ...]:
    """The CPU's feature flags as the kernel lists them (x86 "flags", ARM "Features"), sorted; elsewhere the
    machine's name alone, so that a key made from them still tells machines apart."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return (platform.machine() or "unknown",)
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return tuple(sorted(set(value.split())))
    return (platform.machine() or "unknown",)


def cpu_model_name(cpuinfo: Path = CPUINFO) -> str:
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cpu_key() -> str:
    """The model name and the flags in one line: what code built or measured for this CPU is cached under
    (-mtune=native tunes for the model, -march=native uses the flags)."""
    return f"{cpu_model_name()} | {' '.join(cpu_flags())}"
