"""A reply within or over its latency budget: the wait before text appears and the TPOT, judged in whole nanoseconds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.settings import LatencyBudget
from core.timing.trace import ReplyTrace

DEFINITION = (
    "budget: a reply is within budget when its text appeared within the TTFT budget (the wait before text: "
    "TTFT when streaming, E2E when not, since then nothing shows until the end) and, when streaming, its "
    "TPOT is within the TPOT budget (the default, 180 ms, keeps up with a 250 wpm reader). Exactly at a "
    "budget is within it. A reply with no token is not judged."
)


@dataclass(frozen=True)
class BudgetMark:
    """One reply against a budget. within is None when there was nothing to judge (no token arrived)."""

    budget: LatencyBudget
    streaming: bool
    wait_s: float | None  # before text appeared: TTFT when streaming, E2E when not
    tpot_s: float | None
    wait_within: bool | None
    tpot_within: bool | None  # None: not judged (one token, or not streaming: the reader saw no pace)

    @property
    def within(self) -> bool | None:
        if self.wait_within is None:
            return None
        return self.wait_within and self.tpot_within is not False

    @property
    def line(self) -> str:
        """In words: 'within budget: text after 0.31 s (≤ 1 s), TPOT 11.2 ms (≤ 180 ms)'."""
        if self.within is None or self.wait_s is None:  # judge() sets wait_s and wait_within together
            return "budget: not judged (no text arrived)"
        budget = self.budget
        parts = [f"text after {_seconds(self.wait_s)} ({'≤' if self.wait_within else '>'} {_seconds(budget.ttft_s)})"]
        if self.tpot_within is not None and self.tpot_s is not None:  # judge() sets both, or neither
            parts.append(f"TPOT {_ms(self.tpot_s)} ({'≤' if self.tpot_within else '>'} {_ms(budget.tpot_s)})")
        elif not self.streaming:
            parts.append("not streaming, so the whole wait is before the text")
        return f"{'within' if self.within else 'over'} budget: " + ", ".join(parts)

    def to_dict(self) -> dict:
        return {
            "within": self.within,
            "ttft_budget_s": self.budget.ttft_s,
            "tpot_budget_s": self.budget.tpot_s,
            "streaming": self.streaming,
            "wait_s": self.wait_s,
            "wait_within": self.wait_within,
            "tpot_s": self.tpot_s,
            "tpot_within": self.tpot_within,
            "line": self.line,
        }


def judge(trace: ReplyTrace, streaming: bool, budget: LatencyBudget) -> BudgetMark:
    """Compared in integer nanoseconds, so a reply exactly at a budget is within it, never 1e-17 s over."""
    stamps = trace.timestamps_ns
    if not stamps:
        return BudgetMark(budget, streaming, None, None, None, None)
    first_ns, last_ns = stamps[0] - trace.request_start_ns, stamps[-1] - trace.request_start_ns
    wait_ns = first_ns if streaming else last_ns
    count = trace.output_tokens
    tpot_s = (last_ns - first_ns) / (count - 1) / 1e9 if count > 1 else None
    tpot_within = None
    if streaming and count > 1:
        tpot_within = last_ns - first_ns <= _ns(budget.tpot_s) * (count - 1)
    return BudgetMark(budget, streaming, wait_ns / 1e9, tpot_s, wait_ns <= _ns(budget.ttft_s), tpot_within)


def tally(marks: Iterable[BudgetMark]) -> tuple[int, int]:
    """(within, judged): replies with no token are left out."""
    judged = [mark.within for mark in marks if mark.within is not None]
    return sum(judged), len(judged)


def tally_line(marks: Iterable[BudgetMark]) -> str:
    """'7 of 9 replies within budget'."""
    within, judged = tally(marks)
    if not judged:
        return "no replies judged against the budget yet"
    return f"{within} of {judged} repl{'y' if judged == 1 else 'ies'} within budget"


def budget_document(
    traces: Sequence[ReplyTrace], streaming: Sequence[bool], budget: LatencyBudget
) -> tuple[dict, list[dict]]:
    """What an export carries: the budget with its tally, and each reply's mark."""
    marks = [judge(trace, on, budget) for trace, on in zip(traces, streaming)]
    within, judged = tally(marks)
    summary = {
        **budget.to_dict(),
        "within": within,
        "judged": judged,
        "line": tally_line(marks),
        "definition": DEFINITION,
    }
    return summary, [mark.to_dict() for mark in marks]


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _ms(value: float) -> str:
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.0f} ms" if value >= 0.01 else f"{value * 1000:.1f} ms"


def budget_words(budget: LatencyBudget) -> str:
    """'text within 1.00 s, TPOT within 180 ms while streaming'."""
    return f"text within {_seconds(budget.ttft_s)}, TPOT within {_ms(budget.tpot_s)} while streaming"
