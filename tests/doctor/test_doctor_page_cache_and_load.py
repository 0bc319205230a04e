"""Induced on this machine: a file dropped from the page cache and then read (its resident share follows), and a busy
program running while the doctor watches the load (the warning follows)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.doctor.check import OK, WARN
from core.doctor.load import load_check, measure_other_load
from core.doctor.page_cache import Residency, page_cache_check, resident

SIZE = 16 * 1024 * 1024


def filesystem(path: Path) -> str:
    """The type of the file system holding path, from the longest mount point above it."""
    best, kind = "", ""
    with open("/proc/mounts") as mounts:
        for line in mounts:
            _, point, fstype = line.split()[:3]
            if str(path).startswith(point) and len(point) > len(best):
                best, kind = point, fstype
    return kind


def dropped(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)  # written back first: a dirty page cannot be dropped
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)


def test_resident_share_follows_the_page_cache(tmp_path):
    if filesystem(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip("a tmpfs file is memory itself: it cannot be dropped from the page cache")
    path = tmp_path / "model.gguf"
    path.write_bytes(os.urandom(SIZE))
    dropped(path)
    cold = resident(path)
    assert cold is not None and cold.size == SIZE
    assert cold.fraction < 0.5
    assert page_cache_check(path, cold).status == WARN
    with open(path, "rb") as handle:
        while handle.read(1 << 20):
            pass
    warm = resident(path)
    assert warm is not None and warm.fraction == 1.0
    check = page_cache_check(path, warm)
    assert check.status == OK and check.figure == "100% of model.gguf (17 MB) is in the page cache"


def test_page_cache_edges(tmp_path):
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    assert resident(empty) == Residency(0, 0)
    assert resident(tmp_path / "absent.gguf") is None
    assert page_cache_check(empty, None).figure.startswith("unknown")
    cold = page_cache_check(tmp_path / "m.gguf", Residency(0, 2_000_000_000))
    assert cold.status == WARN and "reads the other 2.0 GB from disk" in cold.advice


@pytest.mark.subprocess
def test_a_busy_program_gives_the_load_warning():
    """A program spinning for the whole probe: /proc/stat shows about a core busy that is not the doctor's, and the
    check warns (the engine computing on every core here, so any other load takes from it)."""
    spinner = subprocess.Popen(
        [sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert spinner.stdout is not None and spinner.stdout.readline().strip() == "spinning"
        load = measure_other_load(1.5)
    finally:
        spinner.kill()
        spinner.wait()
    assert load.others_cores is not None and load.others_cores >= 0.5  # the spinner's core, whoever else ran
    cores = len(os.sched_getaffinity(0))
    check = load_check(load, usable=cores, threads=cores)
    assert check.status == WARN
    assert check.figure.startswith(f"other programs used {load.others_cores:.2f} cores of {cores}")
    assert "close or pause" in check.advice
