"""Where the llama.cpp build we measure against lives: one folder per version, CPU flags and build flags.

One compile of llama.cpp gives both things the tests measure against: its shared libraries, packed into
llama-cpp-python's wheel, and llama-server, which loads the same libraries. llama.cpp compiles for the
CPU it is built on (GGML_NATIVE), so a build is only valid on a CPU with the same flags, made with the
same compiler flags. pip's wheel cache keys a built wheel by version alone and would hand one CPU's
build to another, so Latency Lab keeps its own cache, keyed by all three (tools/llama_cpp_builds.py
builds into it; the tests and `python -m core.remote.llama_cpp_server` read it).
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path

from core.cpu import cpu_flags

LLAMA_CPP_PYTHON = "0.3.36"  # the llama-cpp-python release whose llama.cpp the build comes from

# ggml's AMX matrix path dies with SIGILL (tileloadd in ggml_backend_amx_mul_mat) on the AMX Xeons we run
# on, on any prompt of a few hundred tokens. Under GGML_NATIVE, -DGGML_AMX_*=OFF changes nothing, since
# -march=native turns the instructions back on; an explicit -mno-* does win over -march in gcc and clang.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# Shared libraries, as llama-cpp-python's own build makes them, found by llama-server beside itself ($ORIGIN).
CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_SERVER=ON "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF "
    "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH=$ORIGIN"
)


def compiler_flags(flags: tuple[str, ...]) -> str:
    """CFLAGS/CXXFLAGS for the build: AMX off wherever the CPU has it (the flags exist on x86 only)."""
    return NO_AMX if any(flag.startswith("amx") for flag in flags) else ""


@dataclass(frozen=True)
class BuildRecipe:
    """Everything a build's result depends on, besides the sources that the version names."""

    version: str
    cpu_flags: tuple[str, ...]
    cmake_args: str
    compiler_flags: str

    @property
    def key(self) -> str:
        fields = {
            "version": self.version,
            "cpu_flags": list(self.cpu_flags),
            "cmake_args": self.cmake_args,
            "compiler_flags": self.compiler_flags,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> dict:
        return {
            "version": self.version,
            "machine": platform.machine(),
            "cpu_flags": " ".join(self.cpu_flags),
            "cmake_args": self.cmake_args,
            "compiler_flags": self.compiler_flags,
            "key": self.key,
        }


def recipe(*, version: str = LLAMA_CPP_PYTHON, flags: tuple[str, ...] | None = None) -> BuildRecipe:
    """The recipe for this machine (or for the CPU flags given)."""
    flags = cpu_flags() if flags is None else flags
    return BuildRecipe(version, flags, CMAKE_ARGS, compiler_flags(flags))


def build_folder(build: BuildRecipe) -> Path:
    """The build's folder: llama-server, llama.cpp's shared libraries beside it, and the wheel that packs them."""
    from core.cache_paths import cache_root

    return cache_root() / "llama.cpp" / f"{build.version}-{build.key}"


def cached_llama_server() -> Path:
    """Where tools/llama_cpp_builds.py puts llama-server built for this CPU with today's flags."""
    return build_folder(recipe()) / "llama-server"
