"""Building the kernels once per machine: the cache key, a failed compile, and a machine without a compiler."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import core.kernels.build as build
import core.kernels.library as library
from core.kernels.build import KernelsUnavailable, build_library, checksum_path, library_path, verified


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


def test_a_failed_compile_is_one_line_and_native_loads_fall_back_to_torchs_int4(
    empty_cache, monkeypatch, tmp_path, real_model
):
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
    assert loaded.describe().runtime is None
    assert "compiling the native GGUF kernels failed" in loaded.describe().precision_note


def test_a_cpu_without_avx2_runs_native_ggufs_on_torchs_int4_kernel_not_the_slow_plain_c(monkeypatch, real_model):
    # The plain C build decodes about 11x slower than the AVX2 one here, and slower than torch's own kernels.
    monkeypatch.setattr(build, "fast_here", lambda: False)
    from core.model.loader import load_model

    loaded = load_model(None)
    assert loaded.describe().runtime is None
    assert "this CPU has no AVX2, so it runs on torch's int4 kernel" in loaded.describe().precision_note


# How a cached library was found damaged: cut short (SIGBUS on every launch, for good), or not a library at all
# (a fall back to torch's int4 path, never rebuilt).
DAMAGE = {
    "cut to 50%": lambda data: data[: len(data) // 2],
    "cut to 10%": lambda data: data[: len(data) // 10],
    "cut to 4 KB": lambda data: data[:4096],
    "empty": lambda data: b"",
    "random bytes": lambda data: bytes(random.Random(0).randrange(256) for _ in range(len(data))),
}


@pytest.mark.subprocess  # each damaged library is loaded in a fresh process, as a launch would
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cached_library_is_rebuilt_before_it_is_loaded(empty_cache, damage):
    built = build_library(portable=True)
    assert verified(built.path) and checksum_path(built.path).is_file()
    built.path.write_bytes(DAMAGE[damage](built.path.read_bytes()))
    assert not verified(built.path)
    # A launch, in a process of its own: loading a truncated library there used to end it with SIGBUS.
    launch = subprocess.run(
        [
            sys.executable,
            "-c",
            "from core.kernels.library import kernels\n"
            "library = kernels(portable=True)\nprint(library.isa, library.compiled_now)",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ.copy(),
    )
    assert launch.returncode == 0 and launch.stdout.split() == ["scalar", "True"], launch.stderr[-2000:]
    assert verified(built.path)


def _read_only(monkeypatch):
    """Writing in the cache fails as on a read-only file system (the tests run as root, whom permissions do not
    stop); the temporary folder elsewhere is writable."""
    cache, real = build.cache_root(), build.tempfile.mkstemp

    def refuse(*args, **kwargs):
        if str(kwargs.get("dir", "")).startswith(str(cache)):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, **kwargs)

    monkeypatch.setattr(build.tempfile, "mkstemp", refuse)


UNWRITABLE = {
    "a read-only cache": (_read_only, "Read-only file system"),
    "a file where the cache should be": (lambda monkeypatch: None, "Not a directory"),
    "a file where the kernels' folder should be": (lambda monkeypatch: None, "File exists"),
}


@pytest.mark.parametrize("case", list(UNWRITABLE))
def test_an_unwritable_cache_builds_into_a_temporary_folder_for_this_run_and_says_so(empty_cache, monkeypatch, case):
    cache = empty_cache / "cache"
    if case == "a file where the cache should be":
        cache.write_text("not a folder")
    elif case == "a file where the kernels' folder should be":
        cache.mkdir()
        (cache / "kernels").write_text("not a folder")
    prepare, reason = UNWRITABLE[case]
    prepare(monkeypatch)
    library_object = library.kernels(portable=True)
    assert library_object.isa == "scalar"
    assert (
        f"cannot be written ({reason}), so they were compiled into a temporary folder for this run"
        in library_object.note
    )
    assert not library_object.path.exists()  # the temporary copy is gone once loaded


@pytest.mark.model
def test_the_default_model_runs_on_the_kernels_with_a_cache_path_that_is_a_file(monkeypatch, tmp_path):
    """Was: the default model was unusable, with an [Errno 20] line."""
    cache = tmp_path / "cache-file"
    cache.write_text("not a folder")
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(cache))
    monkeypatch.setattr(library, "_loaded", {})
    from core.model.loader import load_model

    loaded = load_model(None)
    facts = loaded.describe()
    assert facts.runtime.startswith("Latency Lab's C kernels")
    # the status bar says where a prompt's products run: AMX's tiles where they are on
    assert ("prompts on AMX tiles" in facts.runtime) == bool(library.kernels().ll_use_amx(-1))
    assert "compiled into a temporary folder for this run" in facts.precision_note
    assert "so the tokenizer is built anew at each launch" in facts.precision_note


@pytest.mark.parametrize("variant", ["native", "avx2", "portable"])
def test_every_source_compiles_without_a_warning(variant, tmp_path):
    """-Wall -Wextra are in the build's own flags: a warning the compiler finds is a change to look at, not noise."""
    from core.kernels.build import SOURCE_DIR, _flags, compiler

    cc = compiler()
    if cc is None:
        pytest.skip("no C compiler here")
    flags = [flag for flag in _flags(variant) if flag != "-shared"]
    assert "-Wall" in flags and "-Wextra" in flags
    for source in sorted(SOURCE_DIR.glob("*.c")):
        done = subprocess.run(
            [cc, *flags, "-c", "-o", str(tmp_path / (source.stem + ".o")), str(source)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0 and "warning" not in done.stderr, (source.name, done.stderr[-2000:])


@pytest.mark.subprocess
def test_the_kernels_loaded_before_torch_share_torchs_openmp_pool():
    """A load packs the weights while torch is still being imported: both must still end up on one libgomp."""
    probe = (
        "import sys\n"
        "from core.kernels.library import kernels\n"
        "kernels()\n"
        "assert 'torch' not in sys.modules, 'the kernels imported torch'\n"
        "import torch\n"
        "import json\n"
        "print(json.dumps(sorted({line.split()[-1] for line in open('/proc/self/maps') if 'libgomp' in line})))\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    copies = json.loads(result.stdout)
    assert len(copies) == 1, f"two OpenMP runtimes loaded: {copies}"


def test_an_interrupted_builds_leftovers_are_removed_by_the_next_build_but_a_running_ones_are_kept(tmp_path):
    """Ctrl+C during a build ends the process with os._exit, so its staging file and objects stayed in the cache."""
    now = 1_000_000.0
    stale_file, stale_objects = tmp_path / ".building-abc.so", tmp_path / ".objects-abc"
    running_file, running_objects = tmp_path / ".building-def.so", tmp_path / ".objects-def"
    library_file = tmp_path / "latencylab-kernels.so"
    for path in (stale_file, running_file, library_file):
        path.write_bytes(b"x")
    for folder in (stale_objects, running_objects):
        folder.mkdir()
        (folder / "dots.o").write_bytes(b"x")
    old = now - 3 * build.COMPILE_TIMEOUT_S
    for path in (stale_file, stale_objects, library_file):
        os.utime(path, (old, old))
    for path in (running_file, running_objects):
        os.utime(path, (now - 5, now - 5))
    build.remove_stale_leftovers(tmp_path, now)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [running_file.name, running_objects.name, library_file.name]
    )
