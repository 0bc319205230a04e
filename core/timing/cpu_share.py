"""How much of the CPU a reply's threads really got, and what that says when other programs took the rest."""

from __future__ import annotations

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


def contention_note(cpu_share: float | None) -> str | None:
    """One line for a reply that got much less of the CPU than it asked for, or None."""
    if cpu_share is None or cpu_share >= CONTENDED_SHARE:
        return None
    taken = max(0.0, 1.0 - cpu_share)
    return (
        f"other programs took {taken:.0%} of the CPU during this reply; its TPOT is not the model's "
        f"(it got {cpu_share:.0%} of the cores it computes on)"
    )
