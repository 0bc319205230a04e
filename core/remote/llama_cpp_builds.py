"""Where the llama.cpp builds we measure against live: one folder per version, CPU flags and build flags.

llama.cpp compiles for the CPU it is built on (GGML_NATIVE), so a build is only valid on a CPU with the
same flags, made with the same compiler flags. pip's wheel cache keys a built wheel by version alone and
would hand one CPU's build to another, so Latency Lab keeps its own cache, keyed by all three
(tools/llama_cpp_builds.py builds into it; the tests and `python -m core.remote.llama_cpp_server` read it).
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_PYTHON = "0.3.36"  # the llama-cpp-python release whose llama.cpp both builds come from
WHEEL, SERVER = "wheel", "server"

# ggml's AMX matrix path dies with SIGILL (tileloadd in ggml_backend_amx_mul_mat) on the AMX Xeons we run
# on, on any prompt of a few hundred tokens. Under GGML_NATIVE, -DGGML_AMX_*=OFF changes nothing, since
# -march=native turns the instructions back on; an explicit -mno-* does win over -march in gcc and clang.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
# llama-cpp-python's multimodal library (mtmd) is not used here; leaving it out saves a part of the compile.
WHEEL_CMAKE_ARGS = "-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF"
SERVER_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF "
    "-DGGML_NATIVE=ON"
)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...]:
    """The CPU's feature flags as the kernel lists them (x86 "flags", ARM "Features"), sorted."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return (platform.machine() or "unknown",)
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return tuple(sorted(set(value.split())))
    return (platform.machine() or "unknown",)


def compiler_flags(flags: tuple[str, ...]) -> str:
    """CFLAGS/CXXFLAGS for both builds: AMX off wherever the CPU has it (the flags exist on x86 only)."""
    return NO_AMX if any(flag.startswith("amx") for flag in flags) else ""


@dataclass(frozen=True)
class BuildRecipe:
    """Everything a build's result depends on, besides the sources that the version names."""

    kind: str
    version: str
    cpu_flags: tuple[str, ...]
    cmake_args: str
    compiler_flags: str

    @property
    def key(self) -> str:
        fields = {
            "kind": self.kind,
            "version": self.version,
            "cpu_flags": list(self.cpu_flags),
            "cmake_args": self.cmake_args,
            "compiler_flags": self.compiler_flags,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> dict:
        return {
            "kind": self.kind,
            "version": self.version,
            "machine": platform.machine(),
            "cpu_flags": " ".join(self.cpu_flags),
            "cmake_args": self.cmake_args,
            "compiler_flags": self.compiler_flags,
            "key": self.key,
        }


def recipe(kind: str, *, version: str = LLAMA_CPP_PYTHON, flags: tuple[str, ...] | None = None) -> BuildRecipe:
    """The recipe for this machine (or for the CPU flags given)."""
    flags = cpu_flags() if flags is None else flags
    cmake_args = WHEEL_CMAKE_ARGS if kind == WHEEL else SERVER_CMAKE_ARGS
    return BuildRecipe(kind, version, flags, cmake_args, compiler_flags(flags))


def build_folder(build: BuildRecipe) -> Path:
    from core.cache_paths import cache_root

    return cache_root() / "llama.cpp" / f"{build.kind}-{build.version}-{build.key}"


def cached_llama_server() -> Path:
    """Where tools/llama_cpp_builds.py puts llama-server built for this CPU with today's flags."""
    return build_folder(recipe(SERVER)) / "llama-server"
