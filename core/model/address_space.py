"""The process's address space under `ulimit -v` (RLIMIT_AS): its limit, what is in use, and a refusal in words."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def address_space_limit() -> int | None:
    """The soft RLIMIT_AS (`ulimit -v`) in bytes, or None when there is none."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def address_space_in_use() -> int | None:
    """This process's virtual size (what RLIMIT_AS counts), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def address_space_refusal(path: Path, error: BaseException) -> str | None:
    """Why mapping or reading the file failed, when `ulimit -v` is the reason (a MemoryError, or ENOMEM from mmap),
    else None: the file is not to blame then, though the error reads as if it were."""
    limit = address_space_limit()
    refused = isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM)
    if limit is None or not refused:
        return None
    return (
        f"the model file {path.name} cannot be mapped into memory: this process may use only {limit / 1e9:.2f} GB of "
        f"address space (ulimit -v). Raise the limit (ulimit -v unlimited) or choose a smaller model."
    )
