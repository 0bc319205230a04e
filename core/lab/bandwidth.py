"""A STREAM-style read kernel over a buffer far larger than the last-level cache, and the decode ceiling it implies."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import asdict, dataclass

from core.lab.cancellation import MeasurementError, check_cancel
from core.roofline.ceilings import last_level_cache_bytes

MIB = 1024 * 1024
MIN_BUFFER_BYTES = 512 * MIB
# STREAM asks for at least four times the cache; sixteen leaves no doubt that memory, not cache, is read.
CACHE_MULTIPLE = 16
DEFAULT_PASSES = 10


@dataclass(frozen=True)
class BandwidthMeasurement:
    """bytes_per_s is the best pass, as STREAM reports; the median shows how noisy the machine was."""

    bytes_per_s: float
    median_bytes_per_s: float
    buffer_bytes: int
    passes: int
    last_level_cache_bytes: int | None
    threads: int
    method: str

    def to_dict(self) -> dict:
        return asdict(self)


def default_buffer_bytes() -> int:
    cache = last_level_cache_bytes() or 0
    return max(MIN_BUFFER_BYTES, CACHE_MULTIPLE * cache)


def measure_read_bandwidth(
    buffer_bytes: int | None = None,
    passes: int = DEFAULT_PASSES,
    cancel: threading.Event | None = None,
    device: str = "cpu",
) -> BandwidthMeasurement:
    """Sum a float32 buffer with torch's own threads (those decode uses) and time each pass."""
    import torch

    size = buffer_bytes or default_buffer_bytes()
    try:
        # ones() writes every page, so the timed passes read memory that really is resident.
        buffer = torch.ones(size // 4, dtype=torch.float32, device=device)
    except (RuntimeError, MemoryError) as error:
        raise MeasurementError(f"could not allocate the {size / MIB:,.0f} MiB bandwidth buffer: {error}") from error
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    try:
        buffer.sum()
        synchronize()
        rates = []
        for _ in range(passes):
            check_cancel(cancel)
            start = time.perf_counter_ns()
            buffer.sum()
            synchronize()
            rates.append(buffer.numel() * 4 / ((time.perf_counter_ns() - start) / 1e9))
    finally:
        del buffer
    return BandwidthMeasurement(
        bytes_per_s=max(rates),
        median_bytes_per_s=statistics.median(rates),
        buffer_bytes=size,
        passes=passes,
        last_level_cache_bytes=last_level_cache_bytes(),
        threads=torch.get_num_threads(),
        method=f"torch.sum over a {size / MIB:,.0f} MiB float32 buffer on {device}, best of {passes} passes",
    )


def ceiling_row(dtype: str, weight_bytes: int, decode_tok_s: float | None, bandwidth_bytes_s: float) -> dict:
    """Decode reads every weight once per token, so bandwidth / weight bytes bounds tokens per second."""
    ceiling = bandwidth_bytes_s / weight_bytes
    return {
        "dtype": dtype,
        "weight_bytes": weight_bytes,
        "bandwidth_bytes_s": bandwidth_bytes_s,
        "ceiling_tok_s": ceiling,
        "decode_tok_s": decode_tok_s,
        "fraction_of_ceiling": decode_tok_s / ceiling if decode_tok_s is not None else None,
    }
