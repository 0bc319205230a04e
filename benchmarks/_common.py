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


def bare_reply(model, input_ids, new_tokens: int, loop: str = "generate"):
    """Greedy reply ids of exactly new_tokens, no streamer: model.generate, or the app's lean loop."""
    if loop == "generate":
        return model.generate(input_ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    from transformers import LogitsProcessorList, MinNewTokensLengthLogitsProcessor

    from core.generation.decode.choice import lean_decoder
    from core.generation.decode.loop import lean_decode

    eos = model.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    keep_going = LogitsProcessorList([MinNewTokensLengthLogitsProcessor(input_ids.shape[1], new_tokens, eos)])
    return lean_decode(lean_decoder(model), input_ids, new_tokens, eos_token_ids=eos, logits_processor=keep_going)


def generate_seconds(model, input_ids, new_tokens: int, loop: str = "generate") -> float:
    """Wall time of a bare reply (no streamer) that must produce exactly new_tokens.

    It runs on the compute thread, as the app's replies do: a second OpenMP pool would slow both.
    """
    import torch

    from core.compute_thread import on_compute_thread

    def run() -> float:
        with torch.inference_mode():
            started = time.perf_counter()
            bare_reply(model, input_ids, new_tokens, loop)
            return time.perf_counter() - started

    return on_compute_thread(run)


def bare_tpot(model, input_ids, new_tokens: int, loop: str = "generate") -> float:
    """TPOT of a bare reply: (T(N) - T(1)) / (N - 1), i.e. (E2E - TTFT) / (N - 1) without a streamer."""
    one = generate_seconds(model, input_ids, 1, loop)
    many = generate_seconds(model, input_ids, new_tokens, loop)
    return (many - one) / (new_tokens - 1)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
