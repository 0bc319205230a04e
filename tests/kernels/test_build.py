"""Building the kernels once per machine: the cache key, a failed compile, and a machine without a compiler."""

from __future__ import annotations

import shutil

import pytest

import core.kernels.build as build
import core.kernels.library as library
from core.kernels.build import KernelsUnavailable, build_library, library_path


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(library, "_loaded", {})
    return tmp_path


def test_a_build_is_made_once_and_a_changed_source_builds_anew(empty_cache, monkeypatch):
    first = build_library(portable=True)
    assert first.compiled_now and first.path.is_file()
    again = build_library(portable=True)
    assert not again.compiled_now and again.path == first.path
    sources = empty_cache / "csrc"
    shutil.copytree(build.SOURCE_DIR, sources)
    (sources / "quants.c").write_text((sources / "quants.c").read_text() + "\n/* changed */\n")
    monkeypatch.setattr(build, "SOURCE_DIR", sources)
    changed = build_library(portable=True)
    assert changed.compiled_now and changed.path != first.path


def test_a_library_built_once_loads_without_a_compiler(empty_cache, monkeypatch):
    built = build_library(portable=True)
    monkeypatch.setattr(build, "compiler", lambda: None)
    assert build_library(portable=True).path == built.path
    assert library.kernels(portable=True).isa == "scalar"


def test_a_failed_compile_is_one_line_and_native_loads_fall_back_to_torchs_int4(empty_cache, monkeypatch, tmp_path,
                                                                             real_model):
    failing = tmp_path / "cc"
    failing.write_text("#!/bin/sh\necho 'cc: error: no such compiler here' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    assert not library_path().is_file()
    with pytest.raises(KernelsUnavailable, match=r"compiling the native GGUF kernels failed \(cc: cc: error"):
        build_library()
    assert not list(library_path().parent.glob(".building-*"))  # nothing half-written is left
    from core.model.loader import load_model

    loaded = load_model(None)
    assert "runtime" not in loaded.describe()
    assert "compiling the native GGUF kernels failed" in loaded.describe()["precision_note"]


def test_a_cpu_without_avx2_runs_native_ggufs_on_torchs_int4_kernel_not_the_slow_plain_c(monkeypatch, real_model):
    # The plain C build decodes about 11x slower than the AVX2 one here, and slower than torch's own kernels.
    monkeypatch.setattr(build, "fast_here", lambda: False)
    from core.model.loader import load_model

    loaded = load_model(None)
    assert "runtime" not in loaded.describe()
    assert "this CPU has no AVX2, so it runs on torch's int4 kernel" in loaded.describe()["precision_note"]
