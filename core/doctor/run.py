"""Run every check in order, each guarded so one unreadable figure says "unknown" and the rest still run; then the
advice, the warnings' first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.doctor.check import FAIL, INFO, WARN, Check, unknown
from core.doctor.cores import cores_check, engine_threads, usable_cpus
from core.doctor.load import PROBE_S, load_check, measure_other_load
from core.doctor.memory import memory_check, read_memory
from core.doctor.openmp import openmp_check
from core.settings import NATIVE_DTYPE

if TYPE_CHECKING:
    from core.roofline.ceilings import Ceilings

NOTHING_TO_DO = "nothing measured here slows replies"


@dataclass
class Report:
    model: str
    checks: list[Check] = field(default_factory=list)

    def advice(self) -> list[str]:
        """What would make replies faster: the warnings' advice, then the other checks' suggestions."""
        ordered = sorted(self.checks, key=lambda check: check.status not in (FAIL, WARN))  # stable: in order
        return list(dict.fromkeys(check.advice for check in ordered if check.advice))

    @property
    def failed(self) -> bool:
        """Whether something asked about could not be checked (the model named cannot be read)."""
        return any(check.status == FAIL for check in self.checks)

    def check(self, name: str) -> Check | None:
        return next((check for check in self.checks if check.name == name), None)

    def to_dict(self) -> dict:
        return {"model": self.model, "checks": [check.to_dict() for check in self.checks], "advice": self.advice()}


def guarded(name: str, run: Callable[[], Check | list[Check]]) -> list[Check]:
    """The check's lines, or one line saying it could not be made: a doctor that crashes helps no one."""
    try:
        result = run()
    except Exception as error:  # noqa: BLE001 - any failure of one check becomes its "unknown" line
        return [unknown(name, f"{type(error).__name__}: {error}"[:300])]
    return result if isinstance(result, list) else [result]


def run_doctor(
    spec: str | None,
    dtype: str = NATIVE_DTYPE,
    device: str = "cpu",
    measure: bool = False,
    probe_s: float = PROBE_S,
    progress: Callable[[str], None] | None = None,
) -> Report:
    from core.remote.spec import is_remote_spec

    say = progress or (lambda _: None)
    report = Report(spec or "embedded")
    cpus, threads = usable_cpus(), engine_threads()
    report.checks += guarded("cores", lambda: cores_check(cpus, threads))
    report.checks += guarded("load", lambda: load_check(measure_other_load(probe_s), len(cpus or ()), threads))
    load = report.check("load")
    busy = None if load is None or load.status == INFO else load.status == WARN
    memory = read_memory()
    report.checks += guarded("memory", lambda: memory_check(memory))
    report.checks += guarded("openmp", lambda: openmp_check(busy=busy))
    if is_remote_spec(spec):
        from core.doctor.remote import not_checked, remote_check

        say("reaching the server")
        report.checks += guarded("server", lambda: remote_check(spec))
        report.checks.append(not_checked())
        return report
    report.checks += _model_checks(spec, dtype, device, memory, threads, measure, say)
    return report


def _model_checks(spec, dtype: str, device: str, memory, threads: int | None, measure: bool, say) -> list[Check]:
    """The kernels, the ceilings and the model's own lines, which share its figures."""
    from core.doctor.model_checks import ceilings_check, decode_check, fit_check, model_check
    from core.doctor.model_figures import model_figures
    from core.errors import ModelLoadError
    from core.model.source import resolve_model_source, with_header

    figures, problem = None, None
    try:
        figures = model_figures(with_header(resolve_model_source(spec)), dtype)
    except ModelLoadError as error:
        problem = _unreadable(spec, str(error))
    except Exception as error:  # noqa: BLE001 - a header this reader did not foresee: said, and the rest checked
        problem = _unreadable(spec, f"{type(error).__name__}: {error}"[:300])
    checks = guarded("kernels", lambda: _kernels(figures, dtype))
    ceilings: list = []
    checks += guarded("ceilings", lambda: ceilings_check(*_ceilings(threads, measure, say, ceilings)))
    found = ceilings[0] if ceilings else None
    if device != "cpu":
        from core.doctor.device import device_check

        checks += guarded("device", lambda: device_check(device, dtype, figures.kind if figures else None))
    if figures is None:
        return [*checks, problem] if problem else checks
    checks += guarded("model", lambda: model_check(figures))
    checks += guarded("model_fit", lambda: fit_check(figures, memory))
    if figures.file is not None and dtype == NATIVE_DTYPE:  # other dtypes load from the converted cache instead
        from core.doctor.page_cache import page_cache_check, resident

        path = figures.file
        checks += guarded("page_cache", lambda: page_cache_check(path, resident(path)))
    checks += guarded("decode_ceiling", lambda: decode_check(figures, found))
    return checks


def _unreadable(spec, why: str) -> Check:
    """The model named cannot be read: a failed check, whose advice tells a file that is there from one that is not."""
    there = spec is not None and Path(str(spec)).expanduser().is_file()
    advice = (
        "the file is there but is not a model Latency Lab can read: download it again (it may be truncated or "
        "corrupt), or give --model another file"
        if there
        else "give --model an existing .gguf file, a model folder, a hub id already downloaded, or a server's URL"
    )
    return Check("model", f"cannot be read: {why}", {"spec": spec}, FAIL, advice)


def _kernels(figures, dtype: str) -> Check:
    from core.cpu import cpu_flags
    from core.doctor.kernels import kernels_check
    from core.kernels.build import compiler, fast_here, library_path, verified

    built = verified(library_path())
    loaded_isa, without, widened, amx = None, set(), {}, None
    if built and fast_here():  # loading a built library is cheap; building one is not the doctor's to do
        from core.kernels.library import kernels

        library = kernels()
        loaded_isa = library.isa
        amx = bool(library.ll_use_amx(-1))  # as a load would run prompts (core/model/kernel_causal_lm.py)
        if figures is not None and figures.kind == "gguf" and dtype == NATIVE_DTYPE:
            types = set(figures.tensor_types)
            widened = {  # a type this build packs in its own layout runs as itself
                name: wide.name
                for name, wide in library.widened.items()
                if name in types and not library.types[name].packs
            }
            without = types - set(library.kernel_types) - set(library.widened)
    return kernels_check(cpu_flags(), dtype, built, compiler() is not None, loaded_isa, without, amx, widened)


def _ceilings(threads: int | None, measure: bool, say, found: list) -> tuple[Ceilings | None, bool]:
    """(ceilings, measured now): cached ones, or measured now with --measure; also appended to found, for the decode
    line."""
    from core.roofline.ceilings import cached_ceilings, measure_ceilings

    ceilings: Ceilings | None
    if measure:
        say("measuring this machine's GEMM and memory ceilings (about 10 s)")
        ceilings, measured = measure_ceilings(threads, progress=say), True
    else:
        ceilings, measured = cached_ceilings(threads), False
    if ceilings is not None:
        found.append(ceilings)
    return ceilings, measured
