"""The events a generation yields: one per token, then exactly one finish."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class StopReason(str, Enum):
    EOS = "eos"
    MAX_TOKENS = "max_tokens"
    STOPPED = "stopped"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class TokenEvent:
    """One generated token, stamped with perf_counter_ns() inside the streamer's put()."""

    index: int
    token_id: int
    text: str
    timestamp_ns: int


@dataclass(frozen=True, slots=True)
class FinishedEvent:
    """The end of a generation. tail_text is text held back at the last token (an unfinished character)."""

    stop_reason: StopReason
    output_tokens: int
    timestamp_ns: int
    tail_text: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PrefillProgress:
    """The prompt's pass reached a decoder layer: layers_done of layers_total, stamped with perf_counter_ns()."""

    layers_done: int
    layers_total: int
    timestamp_ns: int

    @property
    def fraction(self) -> float:
        return self.layers_done / self.layers_total if self.layers_total else 1.0


@dataclass(frozen=True, slots=True)
class ComputeStarted:
    """The reply's job began on the compute thread (after any wait behind other work there)."""

    timestamp_ns: int
