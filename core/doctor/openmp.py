"""The OpenMP settings the engine inherits from this environment, and what they cost here."""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.doctor.check import INFO, OK, WARN, Check

VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_SPINCOUNT", "MKL_NUM_THREADS")
# benchmarks/omp_wait_policy.py (core/timing/cpu_share.py has the figures): on a quiet machine threads that sleep
# while they wait made TPOT 16% slower than libgomp's default.
PASSIVE_ON_QUIET = (
    "OMP_WAIT_POLICY=PASSIVE is set while the machine is quiet: sleeping between steps made TPOT about 16% slower "
    "than libgomp's default here; unset it unless other programs keep the cores busy"
)


def openmp_check(environment: Mapping[str, str] | None = None, busy: bool | None = None) -> Check:
    """busy: whether other programs load the machine now (the load check's finding), None when unknown."""
    environment = os.environ if environment is None else environment
    settings = {name: environment.get(name) for name in VARIABLES}
    given = {name: value for name, value in settings.items() if value is not None}
    figure = ", ".join(f"{name}={value}" for name, value in given.items()) or "none set (libgomp's defaults)"
    threads = (given.get("OMP_NUM_THREADS") or "").strip()
    if threads and not (threads.split(",")[0].isdigit() and int(threads.split(",")[0]) > 0):
        return Check(
            "openmp",
            figure,
            settings,
            WARN,
            f"OMP_NUM_THREADS={threads!r} is not a positive number of threads, so OpenMP ignores it: fix or unset it",
        )
    policy = (given.get("OMP_WAIT_POLICY") or "").strip().upper()
    if policy == "PASSIVE" and busy is False:
        return Check("openmp", figure, settings, INFO, PASSIVE_ON_QUIET)
    if policy == "ACTIVE" and busy:
        return Check(
            "openmp",
            figure,
            settings,
            WARN,
            "OMP_WAIT_POLICY=ACTIVE keeps the engine's threads spinning against the busy programs: use PASSIVE while "
            "they run",
        )
    return Check("openmp", figure, settings, OK)
