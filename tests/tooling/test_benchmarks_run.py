"""The quick benchmarks still run on today's code: three of them had broken silently (the served model's verbs, the one
kernel path, work applied once a frame) and a figure cannot be measured with a benchmark that fails. Smallest sizes,
no llama.cpp; what they measure is not asserted (tests do not time things), only that each runs to its figure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[2]

QUICK = [
    ("window_cpu", ["--replies", "1", "--tokens", "12", "--tok-s", "400"], "the window's own CPU while streaming"),
    ("prefill", ["--engines", "native", "--words", "45", "--rounds", "1", "--tokens", "2"], "TTFT (a 1-token reply"),
    ("verify_cost", ["--repeats", "1"], "a step reads"),
    ("stamp_to_consumer", ["--tokens", "8"], "put() stamp -> consumer thread delay"),
    ("chat_load", ["--replies", "10", "--tokens", "10", "--repeats", "1"], "a saved chat of 10 replies"),
]


@pytest.mark.parametrize(("script", "arguments", "figure"), QUICK, ids=[script for script, _, _ in QUICK])
def test_a_quick_benchmark_runs_to_its_figure(script, arguments, figure, tmp_path):
    scratch = tmp_path / "tmp"  # the run's temp dir: what it makes there, it removes (hundreds were left in /tmp)
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1", "TMPDIR": str(scratch)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert figure in done.stdout, done.stdout[-2000:]
    # torch keeps its compile cache in the temp dir on purpose, for later runs; the rest is the benchmark's
    left = [path.name for path in scratch.iterdir() if not path.name.startswith("torchinductor_")]
    assert left == []
