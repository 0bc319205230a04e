"""This machine's ceilings, each measured with its method and cached per CPU: GEMM FLOP/s per precision, and the
read bandwidth of DRAM (a buffer at least 4x the last-level cache) and of the last-level cache itself.

A ceiling measured while other programs used more than a tenth of the cores is flagged and not cached: on a
busy machine the same read loop gives a fraction of what the memory can do.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path

from core.atomic_file import atomic_write_text
from core.cache_file import flag, list_of, mapping, number, one_of, optional, read_cache_json, record, text, whole
from core.cache_paths import cache_root
from core.roofline.machine_load import LoadProbe

MIB = 1024 * 1024
GEMM_PRECISIONS = ("float32", "bfloat16")
# rows x inner x outer: a prompt of 1,024 tokens through a 1,024 x 2,048 weight.
GEMM_SHAPE = (1024, 1024, 2048)
DRAM_CACHE_MULTIPLE = 4  # the (and STREAM's) rule: a buffer at least 4x the last-level cache
MIN_DRAM_BUFFER = 512 * MIB
LLC_FRACTION = 4  # a quarter of the last-level cache: well past the private caches, well inside the shared one
MIN_PASSES = 5
BUDGET_S = 0.4  # per ceiling, after the minimum passes
# 2: with the int8 ceiling the kernels' prompt GEMM runs against; 3: and AMX's, where on; 4: AVX2's int8 loop sums
# in 16 bits as its GEMM now does, so a ceiling measured before reads a third low
FORMAT = 4

Timer = Callable[[], float]


@dataclass(frozen=True)
class Ceiling:
    name: str  # gemm_float32, gemm_bfloat16, dram, llc
    label: str  # for plots and sentences: "bfloat16 GEMM", "DRAM", "last-level cache"
    unit: str  # "flop/s" or "byte/s"
    value: float  # the best pass, as STREAM reports
    median: float
    passes: int
    method: str
    amount: float = 0.0  # FLOPs or bytes of one pass

    @property
    def is_compute(self) -> bool:
        return self.unit == "flop/s"


@dataclass
class Ceilings:
    ceilings: dict[str, Ceiling]
    cpu: str
    threads: int
    last_level_cache_bytes: int | None
    measured_at: str
    others_share: float | None  # share of all cores other programs used during the measurement
    loaded: bool  # others_share above the limit: flagged, not cached
    from_cache: bool = False
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> Ceiling | None:
        return self.ceilings.get(name)

    def to_dict(self) -> dict:
        document = asdict(self)
        document["ceilings"] = {name: asdict(ceiling) for name, ceiling in self.ceilings.items()}
        document["format"] = FORMAT
        return document

    @classmethod
    def from_dict(cls, document: dict) -> Ceilings:
        known_fields = {field.name for field in fields(Ceiling)}
        ceilings = {
            name: Ceiling(**{key: value for key, value in values.items() if key in known_fields})
            for name, values in (document.get("ceilings") or {}).items()
        }
        known = {
            key: document[key]
            for key in (
                "cpu",
                "threads",
                "last_level_cache_bytes",
                "measured_at",
                "others_share",
                "loaded",
                "from_cache",
                "notes",
            )
            if key in document
        }
        return cls(ceilings=ceilings, **known)

    def summary(self) -> str:
        """One line: every ceiling with its value."""
        parts = [f"{ceiling.label} {format_rate(ceiling.value, ceiling.unit)}" for ceiling in self.ceilings.values()]
        state = " (measured under load: not cached)" if self.loaded else " (cached)" if self.from_cache else ""
        return ", ".join(parts) + state


def format_rate(value: float, unit: str) -> str:
    if unit == "flop/s":
        return f"{value / 1e9:,.0f} GFLOP/s"
    return f"{value / 1e9:,.1f} GB/s"


def best_rate(
    run: Callable[[], object],
    amount: float,
    timer: Timer = time.perf_counter,
    min_passes: int | None = None,
    budget_s: float | None = None,
    cancel: threading.Event | None = None,
) -> tuple[float, float, int]:
    """(best, median, passes) of amount / seconds over passes of run(): at least min_passes (MIN_PASSES), then
    more until budget_s (BUDGET_S) of passes have run. One unrecorded pass first warms caches and code paths."""
    min_passes = MIN_PASSES if min_passes is None else min_passes
    budget_s = BUDGET_S if budget_s is None else budget_s
    run()
    rates: list[float] = []
    spent = 0.0
    while len(rates) < min_passes or spent < budget_s:
        if cancel is not None and cancel.is_set():
            break
        started = timer()
        run()
        seconds = timer() - started
        spent += seconds
        rates.append(amount / seconds if seconds > 0 else 0.0)
    if not rates:
        return 0.0, 0.0, 0
    return max(rates), statistics.median(rates), len(rates)


@dataclass(frozen=True)
class Probe:
    """One ceiling's work: run() does `amount` FLOPs or bytes; made only when it is measured."""

    name: str
    label: str
    unit: str
    amount: float
    run: Callable[[], object]
    method: str


def gemm_probe(precision: str, shape: tuple[int, int, int] = GEMM_SHAPE) -> Probe:
    import torch

    rows, inner, outer = shape
    dtype = getattr(torch, precision)
    x, weight = torch.randn(rows, inner).to(dtype), torch.randn(outer, inner).to(dtype)
    return Probe(
        f"gemm_{precision}",
        f"{precision} GEMM",
        "flop/s",
        2.0 * rows * inner * outer,
        lambda: torch.mm(x, weight.t()),
        f"torch.mm of {rows}x{inner} by {inner}x{outer} in {precision} (oneDNN/MKL), "
        f"2 x {rows}x{inner}x{outer} FLOPs over the best pass",
    )


# Rounds of the int8 loop per pass: about 0.1 s on two AVX-512 cores.
INT8_ROUNDS = 20_000_000


def int8_probe() -> Probe | None:
    """The int8 products' ceiling the kernels' prompt GEMM runs against (csrc/peak.c), where the kernels are built
    with SIMD products; None elsewhere."""
    try:
        import torch

        from core.kernels.build import can_build, fast_here
        from core.kernels.library import kernels

        if not (fast_here() and can_build()):
            return None
        library, threads = kernels(), torch.get_num_threads()
        per_round = library.ll_int8_peak(0, threads)
    except Exception:  # noqa: BLE001 - no compiler, no kernels: no int8 ceiling to measure
        return None
    if not per_round:
        return None
    instruction = "vpdpbusd" if "avx512" in library.isa else "maddubs + madd"
    return Probe(
        "gemm_int8",
        "int8 GEMM",
        "flop/s",
        2.0 * per_round * INT8_ROUNDS,
        lambda: library.ll_int8_peak(INT8_ROUNDS, threads),
        f"Latency Lab's int8 loop ({instruction} from registers, {threads} threads): 2 x the 8-bit products over "
        f"the best pass",
    )


def amx_probe() -> Probe | None:
    """The int8 ceiling of AMX's tiles (csrc/gemm_amx.c), which the prompt's GEMM runs on where the CPU and the OS
    have them; None elsewhere."""
    try:
        import torch

        from core.kernels.build import can_build, fast_here
        from core.kernels.library import kernels

        if not (fast_here() and can_build()):
            return None
        library, threads = kernels(), torch.get_num_threads()
        per_round = library.ll_amx_peak(0, threads)
    except Exception:  # noqa: BLE001 - no compiler, no kernels: no tiles to measure
        return None
    if not per_round:
        return None
    return Probe(
        "gemm_amx_int8",
        "AMX int8 GEMM",
        "flop/s",
        2.0 * per_round * AMX_ROUNDS,
        lambda: library.ll_amx_peak(AMX_ROUNDS, threads),
        f"Latency Lab's tile loop (tdpbsud, four 16x16x64 products a round from loaded tiles, {threads} threads): "
        f"2 x the 8-bit products over the best pass",
    )


# Rounds of the tile loop per pass: about 0.1 s on two Sapphire Rapids cores.
AMX_ROUNDS = 2_000_000


def read_probe(name: str, label: str, buffer_bytes: int, why: str) -> Probe:
    """Latency Lab's read loop (csrc/read.c: wide loads, every thread) where the kernels are built, else torch.sum,
    whose pairwise float sums read at about half the rate here."""
    import torch

    buffer = torch.ones(buffer_bytes // 4, dtype=torch.float32)  # written once: every page resident
    size = f"{buffer_bytes / MIB:,.0f} MiB"
    try:
        from core.kernels.build import can_build, fast_here
        from core.kernels.library import kernels

        if not (fast_here() and can_build()):
            raise RuntimeError("no kernels here")
        library, threads = kernels(), torch.get_num_threads()
        return Probe(
            name,
            label,
            "byte/s",
            float(buffer.numel() * 4),
            lambda: library.ll_read(buffer.data_ptr(), buffer.numel() * 4, threads),
            f"Latency Lab's read loop ({library.isa} loads, {threads} threads) over a {size} buffer ({why}), "
            f"bytes over the best pass",
        )
    except Exception:  # noqa: BLE001 - no compiler, no kernels: torch's own reduction reads it too
        return Probe(
            name,
            label,
            "byte/s",
            float(buffer.numel() * 4),
            buffer.sum,
            f"torch.sum over a {size} float32 buffer ({why}), bytes over the best pass",
        )


def dram_probe(last_level_cache: int | None) -> Probe:
    """The read loop over a buffer the last-level cache cannot hold: the DRAM ceiling's work."""
    dram = max(MIN_DRAM_BUFFER, DRAM_CACHE_MULTIPLE * (last_level_cache or 0))
    why = (
        f"{dram / last_level_cache:.0f}x the {last_level_cache / MIB:,.0f} MiB last-level cache"
        if last_level_cache
        else "the last-level cache's size is unknown here"
    )
    return read_probe("dram", "DRAM", dram, why)


def default_probes(last_level_cache: int | None) -> list[Callable[[], Probe]]:
    """Each made when it runs, so only one buffer is in memory at a time."""
    probes: list[Callable[[], Probe]] = [partial(gemm_probe, precision) for precision in GEMM_PRECISIONS]
    for compute in (int8_probe(), amx_probe()):
        if compute is not None:
            probes.append(partial(lambda probe: probe, compute))
    probes.append(lambda: dram_probe(last_level_cache))
    if last_level_cache:
        size = last_level_cache // LLC_FRACTION
        probes.append(
            lambda: read_probe(
                "llc", "last-level cache", size, f"a quarter of the {last_level_cache / MIB:,.0f} MiB last-level cache"
            )
        )
    return probes


def measure_ceilings(
    threads: int | None = None,
    *,
    probes: list[Callable[[], Probe]] | None = None,
    timer: Timer = time.perf_counter,
    probe_load: LoadProbe | None = None,
    cancel: threading.Event | None = None,
    cache: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Ceilings:
    """Measure every ceiling now; cache the result for this CPU unless other programs loaded the machine."""
    import torch

    from core.cpu import cpu_model_name

    threads = threads or torch.get_num_threads()
    llc = last_level_cache_bytes()
    probes = probes if probes is not None else default_probes(llc)
    measured: dict[str, Ceiling] = {}
    with probe_load or LoadProbe() as load:
        for make in probes:
            if cancel is not None and cancel.is_set():
                break
            probe = make()
            if progress is not None:
                progress(f"measuring the {probe.label} ceiling")
            best, median, passes = best_rate(probe.run, probe.amount, timer, cancel=cancel)
            measured[probe.name] = Ceiling(
                probe.name,
                probe.label,
                probe.unit,
                best,
                median,
                passes,
                probe.method.replace("the best pass", f"the best of {passes} passes"),
                probe.amount,
            )
            del probe
    result = Ceilings(
        measured,
        cpu_model_name(),
        threads,
        llc,
        datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        load.others_share,
        load.loaded,
    )
    if result.loaded:
        result.notes.append(
            f"other programs used {load.others_share:.0%} of the cores while these were measured: "
            f"flagged, and not cached"
        )
    complete = cancel is None or not cancel.is_set()
    if cache and complete and not result.loaded:
        _save(result, threads)
    return result


def last_level_cache_bytes(cpu_cache_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    """The largest cache Linux reports for CPU 0, or None where it reports none (other systems)."""
    sizes = []
    for index in cpu_cache_dir.glob("index*"):
        try:
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        units = {"K": 1024, "M": MIB, "G": 1024 * MIB}
        try:
            sizes.append(int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text))
        except (ValueError, IndexError):
            continue
    return max(sizes) if sizes else None


def _cache_path(threads: int) -> Path:
    import torch

    from core.cpu import cpu_key

    key = hashlib.sha256(f"{cpu_key()}\0{torch.__version__}\0{threads}\0{FORMAT}".encode()).hexdigest()[:16]
    return cache_root() / "roofline" / f"ceilings-{key}.json"


def _save(result: Ceilings, threads: int) -> None:
    path = _cache_path(threads)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(result.to_dict()))
    except OSError:
        pass  # measured again next time


# What a cached ceilings file may hold. The rates' ranges hold any CPU from a slow ARM board (MFLOP/s) to a large
# server (PFLOP/s, tens of TB/s); a rate of 0, below 0 or 1e-300 put replies at share -1.94 or 8e307 of a ceiling.
CEILING_NAMES = {f"gemm_{precision}": "flop/s" for precision in (*GEMM_PRECISIONS, "int8", "amx_int8")} | {
    "dram": "byte/s",
    "llc": "byte/s",
}
RATE = number(1e6, 1e18)
_CEILING = record(
    {
        "name": one_of(*CEILING_NAMES),
        "label": text(200),
        "unit": one_of("flop/s", "byte/s"),
        "value": RATE,
        "median": RATE,
        "passes": whole(1, 10**9),
        "method": text(),
        "amount": number(0, 1e18),
    },
    required=("name", "label", "unit", "value", "median", "passes", "method"),
)
_CEILINGS_FIELDS = {
    "ceilings": mapping(one_of(*CEILING_NAMES), _CEILING, len(CEILING_NAMES)),
    "cpu": text(),
    "threads": whole(1, 65_536),
    "last_level_cache_bytes": optional(whole(1, 2**40)),
    "measured_at": text(100),
    "others_share": optional(number(0, 1)),
    "loaded": flag,
    "from_cache": flag,
    "notes": list_of(text(), 100),
}
_CEILINGS_REQUIRED = ("ceilings", "cpu", "threads", "measured_at", "loaded")
# The cache holds this format's only; a lab result keeps the ceilings of its day, whatever their format.
_CEILINGS_FILE = record({"format": whole(FORMAT, FORMAT), **_CEILINGS_FIELDS}, required=("format", *_CEILINGS_REQUIRED))
_CEILINGS_OF_A_RESULT = record(_CEILINGS_FIELDS, required=_CEILINGS_REQUIRED)


def checked_ceilings(document: object, where: str = "the file", cached: bool = True) -> Ceilings:
    """Ceilings from a document that passed the schema above, each ceiling's unit matching its name, or
    CacheFileError naming the first field that does not. cached: the cache's own file, of this format only (a lab
    result's, saved with it, may be of an older one)."""
    from core.cache_file import CacheFileError

    checked = (_CEILINGS_FILE if cached else _CEILINGS_OF_A_RESULT)(document, where)
    for name, ceiling in checked["ceilings"].items():
        if ceiling["name"] != name or ceiling["unit"] != CEILING_NAMES[name]:
            raise CacheFileError(f"ceilings.{name} is named {ceiling['name']!r} in {ceiling['unit']}")
    return Ceilings.from_dict(checked)


def cached_ceilings(threads: int | None = None) -> Ceilings | None:
    """This CPU's ceilings from a quiet measurement, or None where none has been made, or the cache was damaged (set
    aside, and said once: core/cache_file.py)."""
    import torch

    threads = threads or torch.get_num_threads()
    ceilings = read_cache_json(
        _cache_path(threads),
        checked_ceilings,
        "cached ceilings file",
        "the ceilings are measured again when the Lab next needs them",
    )
    if ceilings is not None:
        ceilings.from_cache = True
    return ceilings
