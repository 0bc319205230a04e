"""How much of the CPU a reply's threads really got, and what that says when other programs took the rest."""

from __future__ import annotations

import os
import resource

# A reply alone on the machine keeps its decode threads busy: measured 0.93-0.99 of threads x wall on 2 cores (the
# OpenMP threads spin between steps). Below this share, other programs took enough of the CPU to slow it visibly.
CONTENDED_SHARE = 0.75

DEFINITION = (
    "cpu_share: the engine process's CPU time during the reply (getrusage: user + system, every thread) "
    "over wall time x the threads it computes with. About 1 when the reply had the cores to itself; well "
    "below it when other programs took them, and then its TPOT is not the model's."
)


def process_cpu_s() -> float:
    """CPU seconds this process has used so far, all its threads together."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def share(cpu_s: float, wall_s: float, threads: int) -> float | None:
    return cpu_s / (wall_s * threads) if wall_s > 0 and threads > 0 else None


# benchmarks/omp_wait_policy.py, 2 threads on 2 cores, native, median of 3: with one busy program, OpenMP threads
# that sleep while they wait (OMP_WAIT_POLICY=PASSIVE) gave TPOT 24.6 ms against 46.6 ms for libgomp's default
# (spin, then sleep); on a quiet machine they cost 16% (14.8 against 12.8 ms). Lower spin counts gave neither. So
# the default stays, and a contended reply's note says how to switch.
WAIT_POLICY_ADVICE = (
    "on a machine this busy, launching with OMP_WAIT_POLICY=PASSIVE lets the engine's threads sleep instead of spin "
    "while they wait (TPOT about halved with one busy program on 2 cores)"
)


def contention_note(cpu_share: float | None, wait_policy: str | None = None) -> str | None:
    """One line for a reply that got much less of the CPU than it asked for, or None. wait_policy: the engine's
    OMP_WAIT_POLICY (this process's, which the engine inherits, when not given)."""
    if cpu_share is None or cpu_share >= CONTENDED_SHARE:
        return None
    taken = max(0.0, 1.0 - cpu_share)
    note = (
        f"other programs took {taken:.0%} of the CPU during this reply; its TPOT is not the model's "
        f"(it got {cpu_share:.0%} of the cores it computes on)"
    )
    policy = os.environ.get("OMP_WAIT_POLICY", "") if wait_policy is None else wait_policy
    return note if policy.strip().upper() == "PASSIVE" else f"{note}; {WAIT_POLICY_ADVICE}"
