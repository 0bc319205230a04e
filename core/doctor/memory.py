"""Memory and swap as /proc/meminfo gives them, and the address space `ulimit -v` leaves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.doctor.check import INFO, OK, WARN, Check, gigabytes
from core.model.address_space import address_space_limit

MEMINFO = Path("/proc/meminfo")
# Below this share of the memory free, the page cache cannot keep much: a model's pages are the first to go.
LOW_MEMORY_SHARE = 0.10


@dataclass(frozen=True)
class Memory:
    total: int | None
    available: int | None  # MemAvailable: what can be used without swapping (reclaimable page cache included)
    swap_total: int | None
    swap_free: int | None
    address_space_limit: int | None  # RLIMIT_AS, None when unlimited

    @property
    def swap_used(self) -> int | None:
        return None if self.swap_total is None or self.swap_free is None else self.swap_total - self.swap_free


def read_meminfo(meminfo: Path = MEMINFO) -> dict[str, int]:
    """Each line's figure in bytes ("MemAvailable:  123 kB"); the lines that cannot be read are left out, and a
    missing file gives nothing."""
    figures: dict[str, int] = {}
    try:
        lines = meminfo.read_text(errors="replace").splitlines()
    except OSError:
        return figures
    for line in lines:
        name, _, rest = line.partition(":")
        parts = rest.split()
        try:
            figures[name.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
        except (ValueError, IndexError):
            continue
    return figures


def read_memory(meminfo: Path = MEMINFO) -> Memory:
    figures = read_meminfo(meminfo)
    return Memory(
        figures.get("MemTotal"),
        figures.get("MemAvailable"),
        figures.get("SwapTotal"),
        figures.get("SwapFree"),
        address_space_limit(),
    )


def memory_check(memory: Memory) -> Check:
    value = {
        "total_bytes": memory.total,
        "available_bytes": memory.available,
        "swap_total_bytes": memory.swap_total,
        "swap_used_bytes": memory.swap_used,
        "address_space_limit_bytes": memory.address_space_limit,
    }
    if memory.available is None:
        return Check("memory", "unknown (/proc/meminfo has no MemAvailable here)", value, INFO)
    figure = f"{gigabytes(memory.available)} available"
    if memory.total:
        figure += f" of {gigabytes(memory.total)}"
    if memory.swap_total == 0:
        figure += "; no swap"
    elif memory.swap_total is not None and memory.swap_used is not None:
        figure += f"; swap {gigabytes(memory.swap_used)} used of {gigabytes(memory.swap_total)}"
    if memory.address_space_limit is not None:
        figure += f"; ulimit -v {gigabytes(memory.address_space_limit)}"
    if memory.total and memory.available < LOW_MEMORY_SHARE * memory.total:
        swapping = " and swap is in use" if memory.swap_used else ""
        return Check(
            "memory",
            figure,
            value,
            WARN,
            f"only {memory.available / memory.total:.0%} of memory is free{swapping}: the model's pages are the first "
            f"the kernel drops, then read from disk again mid-reply; close programs that hold memory",
        )
    return Check("memory", figure, value, OK)
