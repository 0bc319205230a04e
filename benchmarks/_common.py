"""Shared helpers for the benchmark scripts: offline mode, the CPU flags and --json report, timing a forced-length reply.

The project is imported as the installed package (`make install`), never through sys.path edits.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from core.atomic_file import atomic_write_text
from core.cpu import cpu_flags


def scratch_dir(prefix: str) -> str:
    """A new folder under the temp dir, removed when this process exits (a benchmark run leaves nothing behind)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Benchmarks drive the real window, which saves every chat: keep those out of the user's own list.
if "LATENCYLAB_DATA_DIR" not in os.environ:
    os.environ["LATENCYLAB_DATA_DIR"] = scratch_dir("latencylab-bench-data-")
# And the window's settings (QSettings, under XDG_CONFIG_HOME): a benchmark measures the defaults a new user gets, not
# what was last chosen here, and what it toggles (streaming off, say) never reaches the user's own window.
os.environ["XDG_CONFIG_HOME"] = scratch_dir("latencylab-bench-config-")


def bare_reply(model, input_ids, new_tokens: int, loop: str = "generate"):
    """Greedy reply ids of exactly new_tokens, no streamer: model.generate, or the app's lean loop."""
    if loop == "generate":
        return model.generate(input_ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    from transformers import LogitsProcessorList, MinNewTokensLengthLogitsProcessor

    from core.generation.decode.choice import lean_decoder
    from core.generation.decode.loop import lean_decode

    eos = model.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    keep_going = LogitsProcessorList([MinNewTokensLengthLogitsProcessor(input_ids.shape[1], new_tokens, eos)])
    return lean_decode(lean_decoder(model), input_ids, new_tokens, eos_token_ids=eos, logits_processor=keep_going)


def generate_seconds(model, input_ids, new_tokens: int, loop: str = "generate") -> float:
    """Wall time of a bare reply (no streamer) that must produce exactly new_tokens.

    It runs on the compute thread, as the app's replies do: a second OpenMP pool would slow both.
    """
    import torch

    from core.compute_thread import on_compute_thread

    def run() -> float:
        with torch.inference_mode():
            started = time.perf_counter()
            bare_reply(model, input_ids, new_tokens, loop)
            return time.perf_counter() - started

    return on_compute_thread(run)


def bare_tpot(model, input_ids, new_tokens: int, loop: str = "generate") -> float:
    """TPOT of a bare reply: (T(N) - T(1)) / (N - 1), i.e. (E2E - TTFT) / (N - 1) without a streamer."""
    one = generate_seconds(model, input_ids, 1, loop)
    many = generate_seconds(model, input_ids, new_tokens, loop)
    return (many - one) / (new_tokens - 1)


def load_as_the_app(path, **options):
    """core.model.loader.load_model as the app's processes load their first model (core/startup_gc.py): Python's cycle
    collector held while the model stack is imported and loaded, then what was made frozen out of later collections.
    Without it the collector walked those objects during the timed passes, which the app's never pay: 1.4-3.8% of a
    1B's 512-token prompt in perf. Each call freezes what its load made."""
    from core import startup_gc
    from core.model.loader import load_model

    startup_gc.hold()
    try:
        return load_model(path, **options)
    finally:
        startup_gc.started()


def fully_packed(loaded):
    """The loaded model with every matrix a load left in the file's layout packed (core/model/idle_packing.py), as the
    app's first decode step would: timed passes then all run on the layout the app settles into."""
    from core.compute_thread import on_compute_thread

    kernel = getattr(loaded.model, "kernel", None)  # only the C kernels' models defer packing
    if kernel is not None:
        import torch

        on_compute_thread(lambda: kernel.pack_pending(torch.get_num_threads()))
    return loaded


def high_water_bytes() -> int:
    """VmHWM, this process's peak resident memory. Not getrusage's ru_maxrss: Linux carries that across
    exec from the forked parent, so a child of a large benchmark would report the parent's peak."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# The instruction sets that decide which kernels run fast; every figure is printed with them.
CPU_FLAGS_OF_INTEREST = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


def flags_of_interest() -> list[str]:
    present = set(cpu_flags())
    return [flag for flag in CPU_FLAGS_OF_INTEREST if flag in present]


def cpu_description() -> str:
    flags = flags_of_interest()
    kind = (
        "AVX-512" + (" with bf16" if "avx512_bf16" in flags else "")
        if "avx512f" in flags
        else ("AVX2 only" if "avx2" in flags else "no AVX2")
    )
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {kind} ({' '.join(flags)})"


class _Tee(io.TextIOBase):
    def __init__(self, stream, lines: list[str]):
        self._stream, self._lines, self._partial = stream, lines, ""

    def write(self, text: str) -> int:
        self._stream.write(text)
        self._partial += text
        *done, self._partial = self._partial.split("\n")
        self._lines.extend(done)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


class Report:
    """What a benchmark printed, with its CPU, written as JSON at exit when --json FILE was given."""

    def __init__(self, name: str, path: str | None):
        self.name, self.path = name, path
        self.lines: list[str] = []
        self.figures: dict[str, dict] = {}
        sys.stdout = _Tee(sys.stdout, self.lines)
        print(cpu_description())
        if path:
            atexit.register(self.write)

    def figure(self, key: str, value, target: str | None = None, met: bool | None = None) -> None:
        """A headline figure for the JSON (the printed text carries it too)."""
        self.figures[key] = {"value": value, "target": target, "met": met}

    def write(self) -> None:
        document = {
            "benchmark": self.name,
            "argv": sys.argv[1:],
            "cpu_flags": flags_of_interest(),
            "cpu": cpu_description(),
            "figures": self.figures,
            "printed": self.lines,
        }
        atomic_write_text(Path(self.path), json.dumps(document, indent=1))


def add_json_option(parser) -> None:
    parser.add_argument("--json", metavar="FILE", help="also write what is printed, and the headline figures, as JSON")


def add_kernels_option(parser) -> None:
    parser.add_argument(
        "--kernels", choices=("native", "avx2"), default="native", help="avx2: the AVX2 build, on an AVX-512 CPU too"
    )


def use_kernels(choice: str) -> None:
    """--kernels avx2: every load in this process takes the AVX2 build (the loader asks library.kernels())."""
    if choice == "avx2":
        from core.kernels import library

        build = library.kernels
        library.kernels = lambda portable=False, progress=None: build("avx2", progress)  # type: ignore[assignment]


def start_report(args, name: str) -> Report:
    return Report(name, getattr(args, "json", None))
