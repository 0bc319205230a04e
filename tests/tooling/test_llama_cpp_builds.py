"""llama.cpp's build is kept per version, CPU flags and build flags: a changed key builds anew, a failed check keeps nothing."""

from __future__ import annotations

import json

import pytest

from tools.llama_cpp_builds import (
    NO_AMX,
    RECIPE_FILE,
    BuildFailed,
    avx2_recipe,
    build_folder,
    ensure_build,
    recipe,
)

AVX2 = ("avx2", "f16c", "fma", "sse4_2")
AMX_XEON = ("amx_bf16", "amx_int8", "amx_tile", "avx2", "avx512_bf16", "avx512_vnni", "avx512f", "f16c", "fma")


@pytest.fixture
def builds(tmp_path, monkeypatch):
    """A builder that writes a marker and counts its calls, over an empty cache of our own."""
    monkeypatch.setenv("LATENCYLAB_CACHE_DIR", str(tmp_path / "cache"))
    made = []

    def make_for(build):
        def make(staging):
            made.append(build.key)
            (staging / "artifact").write_text(build.key)

        return make

    def ensure(build, check=lambda staging: None):
        return ensure_build(build, make_for(build), check, say=lambda line: None)

    ensure.made = made
    return ensure


def test_a_second_run_with_the_same_key_reuses_the_build(builds):
    first = builds(recipe(flags=AVX2))
    again = builds(recipe(flags=AVX2))
    assert first == again and len(builds.made) == 1
    assert json.loads((first / RECIPE_FILE).read_text())["cpu_flags"] == " ".join(AVX2)


def test_other_cpu_flags_build_anew(builds):
    avx2 = builds(recipe(flags=AVX2))
    xeon = builds(recipe(flags=AMX_XEON))
    assert avx2 != xeon and len(builds.made) == 2
    assert (avx2 / "artifact").read_text() != (xeon / "artifact").read_text()


def test_other_build_flags_build_anew(builds):
    plain = recipe(flags=AMX_XEON)
    changed = type(plain)(plain.version, plain.cpu_flags, plain.cmake_args + " -DGGML_LTO=ON", plain.compiler_flags)
    other_compiler_flags = type(plain)(plain.version, plain.cpu_flags, plain.cmake_args, "-O2")
    folders = {builds(plain), builds(changed), builds(other_compiler_flags)}
    assert len(folders) == 3 and len(builds.made) == 3


def test_each_version_is_kept_apart(builds):
    assert builds(recipe(flags=AVX2)) != builds(recipe(flags=AVX2, version="0.3.37"))
    assert len(builds.made) == 2


def test_amx_is_left_out_wherever_the_cpu_has_it():
    assert recipe(flags=AMX_XEON).compiler_flags == NO_AMX
    assert recipe(flags=AVX2).compiler_flags == ""  # an AVX2 compiler may not know the AMX switches


def test_the_avx2_build_is_kept_apart_and_asks_for_no_avx512_on_an_amx_xeon(builds):
    """Benchmarks set our AVX2 kernels beside it on any x86 machine: nothing native, nothing AVX-512, no AMX."""
    avx2 = avx2_recipe(flags=AMX_XEON)
    assert builds(avx2) != builds(recipe(flags=AMX_XEON)) and len(builds.made) == 2
    switches = dict(arg.removeprefix("-D").split("=", 1) for arg in avx2.cmake_args.split())
    assert switches["GGML_NATIVE"] == "OFF" and switches["GGML_AVX2"] == "ON" and switches["GGML_FMA"] == "ON"
    assert all(value == "OFF" for name, value in switches.items() if "AVX512" in name or "AMX" in name)
    assert avx2.compiler_flags == ""  # without -march=native no AMX is turned on to be turned off


def test_a_build_that_fails_its_check_leaves_nothing_behind(builds):
    build = recipe(flags=AMX_XEON)

    def check(staging):
        raise BuildFailed("llama-server failed its check, a prompt of 321 tokens: killed by SIGILL")

    with pytest.raises(BuildFailed, match="SIGILL"):
        builds(build, check)
    assert not build_folder(build).exists()
    assert list(build_folder(build).parent.iterdir()) == []
    builds(build)  # the next run builds again
    assert len(builds.made) == 2
