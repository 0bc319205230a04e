"""Refuse a model that cannot fit in free memory before loading it: on Linux the kernel would kill the app instead."""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import ModelLoadError
from core.model.address_space import address_space_in_use, address_space_limit
from core.model.source import ModelSource
from core.model.weight_count import gguf_parameter_count, safetensors_parameter_count
from core.settings import DTYPE, NATIVE_DTYPE

SKIP_ENV = "LATENCYLAB_SKIP_MEMORY_CHECK"
# Weights are materialised in this precision while loading. Quantised dtypes are packed from
# float32 weights, and a GGUF is dequantised to float32 when it is first converted, except in
# native precision, which packs straight from the file's blocks.
# Address space a load takes besides the weights: the tokenizer (about 100 MB for a 49k vocabulary), the kernels'
# buffers, a new thread's stack. Under `ulimit -v` the embedded model loaded with 0.4 GB of headroom and not with 0.2.
ADDRESS_SPACE_MARGIN = 256 * 2**20
_LOAD_BYTES_PER_PARAMETER = {"float32": 4, "bfloat16": 2, "float16": 2}


def available_memory_bytes() -> int | None:
    """MemAvailable on Linux (what can be used without swapping); None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def larger_than_memory_note(path) -> str | None:
    """A warning when the file cannot stay in memory: its pages are then read from disk as tokens need them."""
    size, available = path.stat().st_size, available_memory_bytes()
    if available is None or size <= available:
        return None
    return (
        f"the file ({size / 1e9:.1f} GB) is larger than the free memory ({available / 1e9:.1f} GB): its weights "
        f"are read from disk as each token needs them, so expect seconds per token"
    )


def estimated_load_bytes(source: ModelSource, dtype: str) -> int | None:
    """The weights' size at their peak during loading, or None when the files do not say.

    A corrupt header raises ModelLoadError naming the file (core/model/weight_count.py): loading it
    would fail anyway, and this says why in one line.
    """
    if source.kind == "gguf" and source.gguf_file is not None:
        count = gguf_parameter_count(source.gguf_file, source.header)
        if dtype == NATIVE_DTYPE:
            from core.model.gguf_kernels import runs_on_kernels

            if runs_on_kernels(source.gguf_file, source.header):
                # Memory-mapped: the file's pages come and go with the page cache, so a file larger than
                # memory still runs, paged in from disk; the loader warns then instead (native_load.py).
                return None
            # torch's int4 kernel packs from the blocks: 4-bit types take about the file's bytes, 5- to 8-bit
            # ones up to twice (two int4 planes; Q6_K four), plus one chunk of rows being decoded.
            return 2 * source.gguf_file.stat().st_size
        return None if count is None else count * 4
    if source.kind == "folder":
        count = safetensors_parameter_count(Path(source.location))
        return None if count is None else count * _LOAD_BYTES_PER_PARAMETER.get(dtype, 4)
    return None


def what_fits(source: ModelSource, available: int) -> list[str]:
    """The precisions this model would load in with `available` bytes free, each with what it needs."""
    fitting = []
    for dtype in DTYPE.choices:
        needed = estimated_load_bytes(source, dtype)
        if dtype == NATIVE_DTYPE and needed is None and source.kind == "gguf" and source.gguf_file is not None:
            size = source.gguf_file.stat().st_size
            if size <= available:  # memory-mapped on the kernels: the file's own bytes
                fitting.append(f"{dtype} (the file's own {size / 1e9:.1f} GB, memory-mapped)")
        elif needed is not None and needed <= available:
            fitting.append(f"{dtype} (about {needed / 1e9:.1f} GB)")
    return fitting


def address_space_needed(source: ModelSource, dtype: str) -> int | None:
    """What a load maps or allocates on top of what the process holds: the weights at their peak (a memory-mapped
    file counts whole), and room for the tokenizer, whose Rust allocator aborts the process when refused."""
    needed = estimated_load_bytes(source, dtype)
    if needed is None and source.kind == "gguf" and source.gguf_file is not None:
        needed = source.gguf_file.stat().st_size
    return None if needed is None else needed + ADDRESS_SPACE_MARGIN


def check_address_space(source: ModelSource, dtype: str) -> None:
    """Refuse in one line a load that `ulimit -v` would end: an mmap refused reads as a corrupt file, and a refused
    allocation in the tokenizer aborts the process (exit 134) with nothing said."""
    needed = address_space_needed(source, dtype)
    if needed is not None:
        check_headroom(needed, f"loading {source.display_name} as {dtype}")


def check_headroom(needed: int, doing: str) -> None:
    """ModelLoadError when `ulimit -v` leaves less than needed bytes of address space for what is being done. Called
    before the load and again once torch and transformers are imported, which take about 0.6 GB of it themselves."""
    limit, in_use = address_space_limit(), address_space_in_use()
    if limit is None or in_use is None or in_use + needed <= limit:
        return
    raise ModelLoadError(
        f"this process may use only {limit / 1e9:.2f} GB of address space (ulimit -v), {in_use / 1e9:.2f} GB of it "
        f"in use already, and {doing} needs about {needed / 1e9:.2f} GB more. Raise the limit (ulimit -v "
        f"unlimited) or choose a smaller model."
    )


def check_memory(source: ModelSource, dtype: str) -> None:
    """Raise ModelLoadError when the model clearly needs more memory than is free right now, saying what would fit,
    or more address space than `ulimit -v` leaves."""
    if os.environ.get(SKIP_ENV, "").lower() in ("1", "true", "yes"):
        return
    check_address_space(source, dtype)
    needed = estimated_load_bytes(source, dtype)
    available = available_memory_bytes()
    if needed is None or available is None or needed <= available:
        return
    fitting = what_fits(source, available)
    advice = (
        f"; {' or '.join(fitting)} would fit. Choose it, or close other programs."
        if fitting
        else ". No precision of it fits now: close other programs or choose a smaller model."
    )
    raise ModelLoadError(
        f"tried to load {source.display_name} as {dtype}, but it needs about {needed / 1e9:.1f} GB of memory "
        f"and only {available / 1e9:.1f} GB is free{advice}"
    )
