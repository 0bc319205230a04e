"""The race's verdict, in words and numbers: who showed text first and by how much, who finished first, why the slower
side was slower (its own diagnosis), how long each made its reader wait, and both sides' TTFT, TPOT and E2E, every
figure taken from the two traces."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.diagnosis.diagnose import HEALTHY, diagnose
from core.settings import READING_WPM, LatencyBudget
from core.timing.budget import judge
from core.timing.reading import reader_wait_s, visible_steps
from core.timing.trace import ReplyTrace

# Closer than this, two moments cannot be told apart by a person (half of the 0.1 s that feels instantaneous).
FELT_S = 0.05
COMPLETE = ("eos", "max_tokens")


@dataclass(frozen=True)
class SideFacts:
    name: str  # "A" or "B"
    label: str  # what sets it apart: "streaming", "float32"
    streaming: bool
    first_text_s: float | None  # when text first appeared: TTFT when streaming, E2E when not
    finished_s: float | None  # the last token: E2E
    reader_wait_s: float | None  # time below the reading line, from the first text to the last
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    output_tokens: int
    characters: int
    stop_reason: str | None
    within_budget: bool | None
    budget_line: str
    slowed_by: str | None = None  # the top cause its diagnosis found, as its summary says it; None when none

    @property
    def complete(self) -> bool:
        return self.stop_reason in COMPLETE

    @property
    def called(self) -> str:
        """'B (streaming)'."""
        return f"{self.name} ({self.label})"


@dataclass(frozen=True)
class Verdict:
    a: SideFacts
    b: SideFacts
    text_first: str | None  # "A" or "B"; None when both appeared at the same instant or neither showed text
    text_first_by_s: float | None
    finished_first: str | None
    finished_first_by_s: float | None
    sentence: str

    def to_dict(self) -> dict:
        return {
            "text_first": self.text_first,
            "text_first_by_s": self.text_first_by_s,
            "finished_first": self.finished_first,
            "finished_first_by_s": self.finished_first_by_s,
            "sentence": self.sentence,
            "a": asdict(self.a),
            "b": asdict(self.b),
        }


def side_facts(name: str, label: str, trace: ReplyTrace, streaming: bool, budget: LatencyBudget) -> SideFacts:
    metrics = trace.metrics()
    steps = visible_steps(trace, streaming)
    mark = judge(trace, streaming, budget)
    if trace.diagnosis is None:
        trace.diagnosis = diagnose(trace)
    found = [finding for finding in trace.diagnosis if finding.kind != HEALTHY]
    return SideFacts(
        name,
        label,
        streaming,
        steps[0][0] if steps else None,
        metrics.e2e_s,
        reader_wait_s(steps),
        metrics.ttft_s,
        metrics.tpot_s,
        metrics.e2e_s,
        trace.output_tokens,
        len(trace.text),
        trace.stop_reason,
        mark.within,
        mark.line,
        found[0].summary if found else None,
    )


def make_verdict(a: SideFacts, b: SideFacts) -> Verdict:
    text_first, text_by = _earlier(a, b, "first_text_s")
    finished_first, finished_by = _earlier(a, b, "finished_s")
    parts = [_first_text_words(a, b, text_first, text_by), _finished_words(a, b, finished_first, finished_by)]
    parts.append(_why_words(a, b, finished_first, finished_by))
    parts += [_reader_words(side) for side in (a, b)]
    sentence = "; ".join(part for part in parts if part)
    return Verdict(a, b, text_first, text_by, finished_first, finished_by, sentence[:1].upper() + sentence[1:])


def _earlier(a: SideFacts, b: SideFacts, field: str) -> tuple[str | None, float | None]:
    first, second = getattr(a, field), getattr(b, field)
    if first is None and second is None:
        return None, None
    if first is None or second is None:
        return ("A" if second is None else "B"), None
    if first == second:
        return None, 0.0
    return ("A" if first < second else "B"), abs(first - second)


def _first_text_words(a: SideFacts, b: SideFacts, first: str | None, by: float | None) -> str:
    if a.first_text_s is None and b.first_text_s is None:
        return "neither showed any text"
    if by is None:
        shown = a if first == "A" else b
        return f"only {shown.called} showed any text"
    if by < FELT_S:
        return f"A and B showed text at about the same moment ({span(by)} apart)"
    winner = a if first == "A" else b
    return f"{winner.called} showed text {span(by)} sooner"


def _finished_words(a: SideFacts, b: SideFacts, first: str | None, by: float | None) -> str:
    if by is None:
        return ""
    if by < FELT_S:
        return f"both finished at about the same moment ({span(by)} apart)"
    winner = a if first == "A" else b
    return f"{winner.called} finished {span(by)} sooner"


def _why_words(a: SideFacts, b: SideFacts, first: str | None, by: float | None) -> str:
    """Why the side that finished later did: the top cause its own diagnosis measured, or that it measured none."""
    if by is None or by < FELT_S or first is None:
        return ""
    slower = b if first == "A" else a
    if slower.slowed_by:
        return f"why {slower.name} was slower: {slower.slowed_by.rstrip('.')}"
    return (
        f"nothing in {slower.name}'s own measurements slowed it: the difference is its configuration ({slower.label})"
    )


def _reader_words(side: SideFacts) -> str:
    if side.first_text_s is None or not side.streaming:
        return ""  # without streaming the whole reply appears at once: the reader never waits after it
    if not side.reader_wait_s:
        return f"while {side.name} streamed, the reader never waited"
    return (
        f"while {side.name} streamed, a {READING_WPM} wpm reader waited {span(side.reader_wait_s)} in all for more text"
    )


def span(seconds: float) -> str:
    """A duration as a person says it: '2.9 s', '0.42 s', '38 ms'."""
    if seconds >= 1:
        return f"{seconds:.1f} s"
    if seconds >= 0.1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.0f} ms"
