"""Build llama.cpp for this CPU once (its libraries in llama-cpp-python's wheel, and llama-server), check it, install the wheel.

The tests measure against llama.cpp: the wheel's quantiser makes the test files, its logits are the
reference, and its Python server and llama.cpp's own llama-server are the real servers. One compile of
the llama.cpp inside llama-cpp-python's sdist gives them all: -march=native with AMX left out (NO_AMX),
shared libraries that llama-server loads from beside itself, and the same libraries packed into
llama-cpp-python's wheel (built with LLAMA_BUILD=OFF, so it compiles nothing again). llama.cpp compiles for
the CPU it is built on (GGML_NATIVE), so a build is only valid on a CPU with the same flags, made with the
same compiler flags. All of it goes into Latency Lab's own cache, keyed by the version, this CPU's flags and
the build flags (BuildRecipe): a machine with other flags, or a change of flags, builds anew. pip's wheel
cache, keyed by version alone, would hand one CPU's build to another; it is never written or read for it
(--no-cache-dir, and the wheel is installed by path). The tests and tools/llama_cpp_server.py read the cache.

Right after the build, a prompt of 321 tokens goes through it twice (the wheel in a subprocess,
llama-server over HTTP on 127.0.0.1). A build that fails stops the install with one line saying which
part failed and why.

With --avx2, also llama.cpp's libraries as an AVX2-only CPU runs them (ggml's AVX2 switches, no -march=native), for
benchmarks that set our AVX2 kernels beside them on any x86 machine.

Run: .venv/bin/python tools/llama_cpp_builds.py [--avx2]   (several minutes the first time; then instant)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere in the checkout

from core.cache_paths import cache_root
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


# An AVX2-only x86 CPU (an EPYC without AVX-512), on any x86 machine: ggml's own switches for AVX2, FMA, F16C and
# BMI2 instead of -march=native, and every AVX-512 and AMX path off. Only the libraries: benchmarks load them into
# llama-cpp-python (LLAMA_CPP_LIB_PATH) beside our AVX2 kernels (`--kernels avx2`).
AVX2_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF "
    "-DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DBUILD_SHARED_LIBS=ON "
    "-DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF "
    "-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH=$ORIGIN"
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


def avx2_recipe(*, version: str = LLAMA_CPP_PYTHON, flags: tuple[str, ...] | None = None) -> BuildRecipe:
    """llama.cpp's libraries as an AVX2-only CPU runs them (no -march=native, so no AMX to leave out either)."""
    return BuildRecipe(version, cpu_flags() if flags is None else flags, AVX2_CMAKE_ARGS, "")


def build_folder(build: BuildRecipe) -> Path:
    """The build's folder: llama-server, llama.cpp's shared libraries beside it, and the wheel that packs them."""
    return cache_root() / "llama.cpp" / f"{build.version}-{build.key}"


def cached_llama_server() -> Path:
    """Where this script puts llama-server built for this CPU with today's flags."""
    return build_folder(recipe()) / "llama-server"


# llama-cpp-python loads llama.cpp's libraries from this folder instead of its own.
LIBRARY_PATH_VARIABLE = "LLAMA_CPP_LIB_PATH"
RECIPE_FILE = "recipe.json"  # written last: a folder without it is not a finished build
VENV_MARK = ".latencylab-llama-cpp"  # in the venv: which build of the wheel is installed there


class BuildFailed(Exception):
    """One line: which build failed and why."""


def ensure_build(
    build: BuildRecipe, make: Callable[[Path], None], check: Callable[[Path], None], say: Callable[[str], None] = print
) -> Path:
    """The folder of this recipe's build: made by make(staging), checked by check(staging), then put in place
    whole; a folder already there (same version, CPU flags and build flags) is used as it is."""
    folder = build_folder(build)
    if (folder / RECIPE_FILE).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        say(f"building llama.cpp {build.version} for this CPU (key {build.key}; several minutes, once)")
        make(staging)
        check(staging)
        (staging / RECIPE_FILE).write_text(json.dumps(build.describe(), indent=2) + "\n")
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished folder from an interrupted run
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _run(command: list, what: str, **kwargs) -> None:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BuildFailed(f"{what} failed (exit {result.returncode}): {last[0]}")


def _compiler_environment(build: BuildRecipe) -> dict:
    env = dict(os.environ)
    env.pop("CMAKE_ARGS", None)  # llama-cpp-python's build reads it; ours are given on the command line
    if build.compiler_flags:
        env["CFLAGS"] = env["CXXFLAGS"] = build.compiler_flags
    return env


def download_sdist(version: str, into: Path) -> Path:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--no-cache-dir",
            f"llama-cpp-python=={version}",
            "-d",
            str(into),
        ],
        "downloading llama-cpp-python's sdist",
    )
    return next(into.glob("llama_cpp_python-*.tar.gz"))


# Read by llama-cpp-python's CMake project (CMAKE_PROJECT_INCLUDE): with LLAMA_BUILD=OFF it compiles nothing, and
# this puts the libraries we compiled where its own build would have put them.
PACK_LIBRARIES = """file(GLOB LATENCYLAB_LIBRARIES "{folder}/lib*.so*")
install(FILES ${{LATENCYLAB_LIBRARIES}} DESTINATION ${{SKBUILD_PLATLIB_DIR}}/llama_cpp/lib)
"""


def compile_llama_cpp(
    build: BuildRecipe, source: Path, work: Path, staging: Path, target: str = "llama-server"
) -> None:
    """The target (llama-server, or llama: the libraries alone) and the shared libraries it loads (llama, ggml and
    the rest), side by side in staging."""
    build_dir = work / "build"
    env = _compiler_environment(build)
    _run(
        ["cmake", "-S", str(source), "-B", str(build_dir), *build.cmake_args.split()], "configuring llama.cpp", env=env
    )
    _run(
        ["cmake", "--build", str(build_dir), "--target", target, "-j", str(os.cpu_count() or 1)],
        "compiling llama.cpp",
        env=env,
    )
    if target == "llama-server":
        shutil.copy2(build_dir / "bin" / "llama-server", staging / "llama-server")
    for library in sorted((build_dir / "bin").glob("lib*.so*")):
        shutil.copy2(library, staging / library.name)  # a symlink's target, copied under the link's name, as wheels do


def pack_wheel(source_root: Path, staging: Path, work: Path) -> None:
    """llama-cpp-python's wheel around the libraries in staging, with nothing compiled again."""
    include = work / "pack-libraries.cmake"
    include.write_text(PACK_LIBRARIES.format(folder=staging.as_posix()))
    env = {**os.environ, "CMAKE_ARGS": f"-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE={include}"}
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-cache-dir",
            "-w",
            str(staging),
            str(source_root),
        ],
        "packing llama-cpp-python's wheel",
        env=env,
    )


def make_build(build: BuildRecipe, sdist: Path, libraries_only: bool = False) -> Callable[[Path], None]:
    """libraries_only: llama.cpp's libraries alone, with no llama-server and no wheel around them."""

    def make(staging: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="latencylab-llama-cpp-") as work:
            work_path = Path(work)
            with tarfile.open(sdist) as archive:
                archive.extractall(work_path, filter="data")
            source_root = next(work_path.glob("llama_cpp_python-*"))
            target = "llama" if libraries_only else "llama-server"
            compile_llama_cpp(build, source_root / "vendor" / "llama.cpp", work_path, staging, target)
            if not libraries_only:
                pack_wheel(source_root, staging, work_path)

    return make


def avx2_libraries() -> Path:
    """Where `--avx2` puts llama.cpp's libraries built for an AVX2-only CPU (for LLAMA_CPP_LIB_PATH)."""
    return build_folder(avx2_recipe())


def _wheel_in(folder: Path) -> Path:
    return next(folder.glob("llama_cpp_python-*.whl"))


def _death(returncode: int) -> str:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return f"killed by {name}" + (
            " (illegal instruction: the build uses an instruction this CPU refuses)" if name == "SIGILL" else ""
        )
    return f"exit {returncode}"


SMOKE_WHEEL = """
import sys
import llama_cpp
from core.quant.agreement import agreement_text
model = llama_cpp.Llama(sys.argv[1], n_ctx=1024, n_threads=2, verbose=False)
ids = model.tokenize(agreement_text().encode())
model.eval(ids)
print(len(ids))
"""


def smoke_wheel(python: str, gguf: Path, libraries: Path | None = None) -> None:
    """A 321-token prompt through the installed wheel, in a process of its own (a SIGILL must not end this one);
    libraries: a folder of llama.cpp's libraries the wheel loads instead of its own."""
    result = subprocess.run(
        [python, "-c", SMOKE_WHEEL, str(gguf)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, LIBRARY_PATH_VARIABLE: str(libraries)} if libraries else None,
    )
    if result.returncode != 0:
        detail = _death(result.returncode)
        if result.returncode > 0:
            detail += ": " + ((result.stderr.strip().splitlines() or ["no output"])[-1])
        raise BuildFailed(f"llama-cpp-python's wheel failed its check, a prompt of 321 tokens: {detail}")
    if int(result.stdout.split()[-1]) < 300:
        raise BuildFailed(f"llama-cpp-python's wheel check read only {result.stdout.split()[-1]} prompt tokens")


def smoke_server(binary: Path, gguf: Path) -> None:
    """A 321-token prompt through llama-server on a free 127.0.0.1 port."""
    from core.quant.agreement import agreement_text
    from tools.llama_cpp_server import LlamaCppServer

    server = LlamaCppServer(gguf, binary=binary, threads=2, context=1024)
    try:
        try:
            server.wait_ready(120)
        except RuntimeError as error:
            raise BuildFailed(f"llama-server failed its check: it did not start ({error})") from None
        body = json.dumps({"prompt": agreement_text(), "n_predict": 2, "cache_prompt": False}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}/completion", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                reply = json.load(response)
        except OSError as error:
            code = server.process.poll()
            detail = _death(code) if code is not None else str(error)
            raise BuildFailed(f"llama-server failed its check, a prompt of 321 tokens: {detail}") from None
        prompt_tokens = reply.get("timings", {}).get("prompt_n", 0)
        if prompt_tokens < 300:
            raise BuildFailed(f"llama-server's check read only {prompt_tokens} prompt tokens")
    finally:
        server.stop()


def install_wheel(folder: Path, build: BuildRecipe, gguf: Path) -> None:
    """Install this build of the wheel (with its server extra) into the running venv, then check it there."""
    mark = Path(sys.prefix) / VENV_MARK
    if mark.is_file() and mark.read_text().strip() == build.key:
        return
    wheel = _wheel_in(folder)
    _run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-cache-dir", f"{wheel}[server]"],
        "installing llama-cpp-python's server extra",
    )
    # By path and forced: whatever llama-cpp-python was there (pip's cache, another CPU's build) is replaced.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-cache-dir",
            "--no-deps",
            "--force-reinstall",
            str(wheel),
        ],
        "installing llama-cpp-python's wheel",
    )
    smoke_wheel(sys.executable, gguf)
    mark.write_text(build.key + "\n")


def check_build(staging: Path, build: BuildRecipe, gguf: Path) -> None:
    install_wheel(staging, build, gguf)
    smoke_server(staging / "llama-server", gguf)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--avx2",
        action="store_true",
        help="also build llama.cpp's libraries as an AVX2-only CPU runs them (benchmarks' --kernels avx2)",
    )
    args = parser.parse_args(argv)
    from core.model.source import embedded_gguf_path

    gguf = embedded_gguf_path()
    build = recipe()
    try:
        with tempfile.TemporaryDirectory(prefix="latencylab-llama-sdist-") as downloads:
            folder = ensure_build(
                build,
                lambda staging: make_build(build, download_sdist(build.version, Path(downloads)))(staging),
                lambda staging: check_build(staging, build, gguf),
                _say,
            )
            install_wheel(folder, build, gguf)
            print(folder)
            if args.avx2:
                avx2 = avx2_recipe()
                print(
                    ensure_build(
                        avx2,
                        lambda staging: make_build(avx2, download_sdist(avx2.version, Path(downloads)), True)(staging),
                        lambda staging: smoke_wheel(sys.executable, gguf, staging),
                        _say,
                    )
                )
    except BuildFailed as failure:
        print(f"tools/llama_cpp_builds.py: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
