"""Shared helpers for the benchmark scripts: import path, offline mode, timing a forced-length generate."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Benchmarks drive the real window, which saves every chat: keep those out of the user's own list.
os.environ.setdefault("LATENCYLAB_DATA_DIR", tempfile.mkdtemp(prefix="latencylab-bench-data-"))


def generate_seconds(model, input_ids, new_tokens: int) -> float:
    """Wall time of a bare model.generate (no streamer) that must produce exactly new_tokens.

    It runs on the compute thread, as the app's replies do: a second OpenMP pool would slow both.
    """
    import torch

    from core.compute_thread import on_compute_thread

    def run() -> float:
        with torch.inference_mode():
            started = time.perf_counter()
            model.generate(input_ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
            return time.perf_counter() - started

    return on_compute_thread(run)


def bare_tpot(model, input_ids, new_tokens: int) -> float:
    """TPOT of bare generate: (T(N) - T(1)) / (N - 1), i.e. (E2E - TTFT) / (N - 1) without a streamer."""
    one = generate_seconds(model, input_ids, 1)
    many = generate_seconds(model, input_ids, new_tokens)
    return (many - one) / (new_tokens - 1)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
