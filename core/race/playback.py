"""Lockstep playback: each side's tokens at their own measured times since Send, read off one shared clock."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from core.timing.trace import ReplyTrace


@dataclass(frozen=True)
class Track:
    """One side's schedule: token i appears at times_s[i] seconds after Send (streaming), or all at the last (not)."""

    texts: tuple[str, ...]
    times_s: tuple[float, ...]
    streaming: bool
    tail_text: str = ""
    reasoning: frozenset[int] = frozenset()

    @classmethod
    def of(cls, trace: ReplyTrace, streaming: bool) -> Track:
        return cls(
            tuple(trace.token_texts),
            tuple(trace.token_times_s()),
            streaming,
            trace.tail_text,
            frozenset(trace.reasoning_indices),
        )

    @property
    def end_s(self) -> float:
        return self.times_s[-1] if self.times_s else 0.0

    def due(self, elapsed_s: float) -> int:
        """How many tokens have arrived by elapsed_s on the shared clock."""
        return bisect_right(self.times_s, elapsed_s)

    def shown_text(self, arrived: int) -> str:
        """The text on screen once `arrived` tokens are in: none before the end when not streaming."""
        if not self.streaming and arrived < len(self.texts):
            return ""
        text = "".join(text for index, text in enumerate(self.texts[:arrived]) if index not in self.reasoning)
        return text + (self.tail_text if arrived == len(self.texts) else "")
