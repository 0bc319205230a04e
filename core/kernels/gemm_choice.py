"""Which precision a prompt's GEMMs run in on this CPU, float32 or bfloat16: measured once per CPU and cached.

bfloat16 is several times float32's speed where the CPU multiplies it natively (AMX tiles, AVX-512 BF16), and
slower where oneDNN has to convert it first (AVX2-only CPUs, AVX-512 without BF16): only a measurement tells.
The two are timed interleaved, so a machine busy with other work slows both alike and the choice stands; it is
cached by CPU, torch version and thread count.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from core.atomic_file import atomic_write_text
from core.cache_paths import cache_root
from core.kernels.build import cpu_flags

PRECISIONS = ("bfloat16", "float32")
# A prompt's typical product: 512 rows through a 1024 x 2048 weight (the embedded model's are 576 wide).
PROBE_SHAPE = (512, 1024, 2048)
PROBE_ROUNDS = 5


@dataclass(frozen=True)
class GemmChoice:
    precision: str
    flops_per_s: dict[str, float]  # best of the rounds, per precision
    shape: tuple[int, int, int]
    threads: int

    def to_dict(self) -> dict:
        return {**asdict(self), "shape": list(self.shape)}


def gemm_seconds(precision: str, shape: tuple[int, int, int], timer: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of one torch GEMM of rows x inner by inner x outer (a weight stored [outer, inner]), after a warm-up."""
    import torch

    rows, inner, outer = shape
    dtype = getattr(torch, precision)
    x, weight = torch.randn(rows, inner).to(dtype), torch.randn(outer, inner).to(dtype)
    torch.mm(x, weight.t())
    started = timer()
    torch.mm(x, weight.t())
    return timer() - started


def measure_choice(
    threads: int,
    time_gemm: Callable[[str, tuple[int, int, int]], float] = gemm_seconds,
    shape: tuple[int, int, int] = PROBE_SHAPE,
    rounds: int = PROBE_ROUNDS,
) -> GemmChoice:
    """Both precisions, interleaved round by round; the faster best time wins."""
    best = {precision: float("inf") for precision in PRECISIONS}
    for _ in range(rounds):
        for precision in PRECISIONS:
            best[precision] = min(best[precision], time_gemm(precision, shape))
    flops = 2 * shape[0] * shape[1] * shape[2]
    rates = {precision: flops / seconds if seconds > 0 else 0.0 for precision, seconds in best.items()}
    return GemmChoice(max(rates, key=rates.__getitem__), rates, shape, threads)


def _cache_path(threads: int):
    import torch

    key = hashlib.sha256(f"{cpu_flags()}\0{torch.__version__}\0{threads}".encode()).hexdigest()[:16]
    return cache_root() / "kernels" / f"gemm-choice-{key}.json"


def gemm_choice(threads: int | None = None, progress=None) -> GemmChoice:
    """This CPU's choice, from the cache or measured now (a fraction of a second, once)."""
    import torch

    threads = threads or torch.get_num_threads()
    path = _cache_path(threads)
    try:
        document = json.loads(path.read_text())
        return GemmChoice(document["precision"], document["flops_per_s"], tuple(document["shape"]), threads)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if progress is not None:
        progress(0.0, "first launch: timing this CPU's float32 and bfloat16 GEMMs for prompts (once)")
    choice = measure_choice(threads)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(choice.to_dict()))
    except OSError:
        pass  # measured again next time
    return choice
