"""The kernel tests, the shape fuzz and the crafted files again, on the kernels built with AddressSanitizer.

The sanitized build (core/kernels/build.py, LATENCYLAB_KERNELS_SANITIZE=address) is loaded into a child pytest
with the compiler's libasan preloaded, as a sanitized library inside an uninstrumented Python needs. Any read or
write outside a buffer ends the child with ASan's report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.kernels.build import SANITIZE_ENV, compiler

# Longer than the suite's 900 s a test: the child runs the kernel tests under the sanitizer after compiling the
# build (124-164 s on the development machine, caches cold or the machine loaded; a slower CPU must not reach it).
pytestmark = [pytest.mark.asan, pytest.mark.subprocess, pytest.mark.timeout(1800)]
ROOT = Path(__file__).resolve().parents[2]
ASAN_EXIT = 99
# Every kernel test but the build's own (compiling is not what the sanitizer checks), and the crafted files. The
# batch-invariance test runs the prompt pass's many-row paths (GEMM tiles, a prompt's rows attending together) on
# every family's shape: 57 s of the sanitized run.
UNDER_ASAN = [
    "tests/kernels/test_batch_invariance.py",
    "tests/kernels/test_dots.py",
    "tests/kernels/test_kernel_model.py",
    "tests/kernels/test_kernel_bounds.py",
    "tests/kernels/test_shape_fuzz.py",
    "tests/model/test_crafted_gguf.py",
]


def asan_runtime() -> str | None:
    """The compiler's AddressSanitizer runtime (libasan.so), or None where there is none."""
    cc = compiler()
    if cc is None:
        return None
    found = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


def under_asan(command: list[str], timeout: int) -> subprocess.CompletedProcess:
    runtime = asan_runtime()
    if runtime is None:
        pytest.skip("no AddressSanitizer runtime (libasan) with this machine's C compiler")
    env = {
        **os.environ,
        "LD_PRELOAD": runtime,
        SANITIZE_ENV: "address",
        "QT_QPA_PLATFORM": "offscreen",
        # Python itself leaks by design at exit; the run is after overflows and use-after-free, not leaks.
        "ASAN_OPTIONS": f"detect_leaks=0:halt_on_error=1:exitcode={ASAN_EXIT}",
    }
    return subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT
    )


def test_the_sanitized_build_reports_an_overflow():
    """The harness itself: a deliberate heap overflow through the sanitized library is caught and reported."""
    script = (
        "import numpy as np\n"
        "from core.kernels.library import kernels\n"
        "library = kernels()\n"
        "assert '-address-' in library.path.name, library.path\n"
        "blocks = np.zeros(34 * 64, dtype=np.uint8)\n"
        "out = np.zeros(1024, dtype=np.float32)\n"
        "library.ll_dequantize_row(8, blocks.ctypes.data, out.ctypes.data, 2048)  # 2048 values into 1024\n"
    )
    result = under_asan(["-c", script], timeout=600)
    assert result.returncode == ASAN_EXIT and "heap-buffer-overflow" in result.stderr, result.stderr[-3000:]


def test_the_kernel_tests_and_the_shape_fuzz_pass_under_the_sanitizer():
    result = under_asan(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not asan", *UNDER_ASAN], timeout=1700)
    report = result.stdout[-4000:] + result.stderr[-4000:]
    assert result.returncode == 0 and "AddressSanitizer" not in result.stderr, report
    assert " passed" in result.stdout, report
