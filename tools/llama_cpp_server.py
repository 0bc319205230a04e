"""Start llama.cpp's OpenAI-compatible server on a local GGUF, on a free loopback port.

Two servers qualify: llama.cpp's own `llama-server` (built once per CPU by tools/llama_cpp_builds.py into
the user's cache; it sends `timings`, prompt progress and /slots), and llama-cpp-python's Python server
(`python -m llama_cpp.server`, from the test extras; usage only). The tests and benchmarks measure a
real server with it; a user can run the same, from the checkout, to set the app's own engine beside llama.cpp on
one file: `python -m tools.llama_cpp_server FILE.gguf`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import subprocess
import sys
import threading
from pathlib import Path

LLAMA_SERVER = "llama-server"
SLOTS = 4  # llama-server batches up to this many requests at once, each with the whole context
PYTHON_SERVER = "llama-cpp-python"
READY_LINES = {PYTHON_SERVER: "Uvicorn running on", LLAMA_SERVER: "llama_server: listening on"}


def llama_server_binary() -> Path | None:
    """llama-server, where one is at hand: $LATENCYLAB_LLAMA_SERVER, the build for this CPU, or on PATH."""
    import shutil

    from tools.llama_cpp_builds import cached_llama_server

    given = os.environ.get("LATENCYLAB_LLAMA_SERVER")
    if given:
        return Path(given)
    cached = cached_llama_server()
    if cached.is_file():
        return cached
    found = shutil.which("llama-server")
    return Path(found) if found else None


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LlamaCppServer:
    """The server process; its stderr is kept line by line (llama.cpp's own per-request timings land there)."""

    def __init__(
        self,
        gguf: Path,
        *,
        threads: int | None = None,
        alias: str = "embedded",
        context: int = 4096,
        kind: str | None = None,
        binary: Path | None = None,
        extra_args: tuple[str, ...] = (),
    ):
        """kind: LLAMA_SERVER or PYTHON_SERVER; by default llama-server where one is at hand.
        binary: this llama-server instead of the one found (a build being checked); extra_args: more of its flags."""
        self.gguf = Path(gguf)
        self.alias = alias
        self.port = free_loopback_port()
        self.lines: list[str] = []
        self._lines: queue.SimpleQueue = queue.SimpleQueue()
        if binary is None and kind in (None, LLAMA_SERVER):
            binary = llama_server_binary()
        if kind == LLAMA_SERVER and binary is None:
            raise RuntimeError("llama-server is not built for this CPU: run tools/llama_cpp_builds.py")
        self.kind = LLAMA_SERVER if binary is not None else PYTHON_SERVER
        thread_count = str(threads or os.cpu_count() or 1)
        if binary is not None:
            command = [
                str(binary),
                "--model",
                str(self.gguf),
                "--alias",
                alias,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--ctx-size",
                str(context * SLOTS),
                "--threads",
                thread_count,
                "--threads-batch",
                thread_count,
                "--parallel",
                str(SLOTS),
                "--slots",
                "--no-webui",
                *extra_args,  # e.g. --spec-type ngram-simple
            ]
        else:
            command = [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(self.gguf),
                "--model_alias",
                alias,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                str(context),
                "--n_threads",
                thread_count,
                "--verbose",
                "True",
                # By default a new request cuts the running one short; queue them instead, as servers do.
                "--interrupt_requests",
                "False",
            ]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        self._reader = threading.Thread(target=self._read, name="llama-cpp-server-log", daemon=True)
        self._reader.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Block until the server says it listens; RuntimeError with its last words if it exits first."""
        while True:
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                raise RuntimeError(f"llama.cpp's server did not start within {timeout_s:g} s") from None
            if line is None:
                raise RuntimeError("llama.cpp's server exited: " + " | ".join(self.lines[-5:]))
            if READY_LINES[self.kind] in line:
                return

    def log_since(self, mark: int) -> list[str]:
        return self.lines[mark:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._reader.join(5)

    def __enter__(self) -> LlamaCppServer:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.stop()

    def _read(self) -> None:
        assert self.process.stdout is not None  # started with stdout=PIPE
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    with LlamaCppServer(args.gguf, threads=args.threads) as server:
        print(f"llama.cpp's server is at {server.url} (Ctrl+C ends it)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
