"""Build llama.cpp's own server (llama-server) once, from the llama.cpp sources inside llama-cpp-python's sdist.

llama-cpp-python's Python server sends no timings; llama-server sends `timings`, prompt progress and
/slots, which the remote-engine tests check. The binary goes to the user's cache, keyed by the
llama-cpp-python version, so later runs (and `make test`) reuse it. Needs cmake and a C++ compiler,
as llama-cpp-python's own install does, and the package index (for the sdist) on first build.

Run: .venv/bin/python tools/build_llama_server.py   (prints the binary's path)
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from core.remote.llama_cpp_server import cached_llama_server


def build(version: str, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="latencylab-llama-server-") as work:
        work_path = Path(work)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={version}", "-d", str(work_path)], check=True)
        archive = next(work_path.glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(archive) as sdist:
            sdist.extractall(work_path, filter="data")
        source = next(work_path.glob("llama_cpp_python-*/vendor/llama.cpp"))
        build_dir = work_path / "build"
        subprocess.run(["cmake", "-S", str(source), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                        "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=ON"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(os.cpu_count() or 1)],
                       check=True, stdout=subprocess.DEVNULL)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        shutil.copy2(build_dir / "bin" / "llama-server", partial)
        partial.replace(target)  # whole or absent: an interrupted build never leaves half a binary


def main() -> int:
    version = importlib.metadata.version("llama-cpp-python")
    target = cached_llama_server(version)
    if target.is_file():
        print(target)
        return 0
    print(f"building llama-server from llama-cpp-python {version}'s llama.cpp (several minutes, once)…",
          file=sys.stderr)
    build(version, target)
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
