"""The events of one reply, in the engine and in the window alike: the prompt ready, compute started, prefill
progress, each token, a server's report, and exactly one finish (or a refusal before anything began)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Annotated, Any, TypeVar

from msgspec import Meta

from core.timing.bounds import MAX_TOKENS_PER_REPLY, Int64, Seconds, TokenIds

_Event = TypeVar("_Event")


def _pickled_by_fields(cls: type[_Event]) -> type[_Event]:
    """A frozen, slotted dataclass pickled as cls(*values).

    dataclass(slots=True) pickles through a __setstate__ written in Python that calls fields() for every object:
    three times the cost of the rest of reading a token off the engine's pipe, on the window's GUI thread.
    """
    names = tuple(item.name for item in fields(cls))  # type: ignore[arg-type]

    def __reduce__(self):  # noqa: N807 - pickle's name
        return cls, tuple(getattr(self, name) for name in names)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls


class StopReason(str, Enum):
    EOS = "eos"
    MAX_TOKENS = "max_tokens"
    STOPPED = "stopped"
    ERROR = "error"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class TokenEvent:
    """One generated token, stamped with perf_counter_ns() inside the streamer's put()."""

    index: int
    token_id: int
    text: str
    timestamp_ns: int
    # Over a network: which chunk brought the token (tokens of one chunk share its arrival stamp), and
    # whether it is reasoning rather than the answer. None and False for a local model.
    chunk: int | None = None
    reasoning: bool = False
    # A draft token the model accepted in a verify pass (speculative decoding): it cost no decode step of its own.
    drafted: bool = False


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class FinishedEvent:
    """The end of a generation. tail_text is text held back at the last token (an unfinished character)."""

    stop_reason: StopReason
    output_tokens: int
    timestamp_ns: int
    tail_text: str = ""
    error: str | None = None


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class PrefillProgress:
    """The prompt's pass reached a decoder layer: layers_done of layers_total, stamped with perf_counter_ns()."""

    layers_done: int
    layers_total: int
    timestamp_ns: int

    @property
    def fraction(self) -> float:
        return self.layers_done / self.layers_total if self.layers_total else 1.0


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ComputeStarted:
    """The reply's job began on the compute thread (after any wait behind other work there)."""

    timestamp_ns: int


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ServerReport:
    """What a remote server said about a reply: its token counts, its own timings, and when its headers came.

    kind: the server's kind ("llama.cpp", "vLLM", ...); output_tokens is the server's usage count, the only honest
    token count over the wire; None where it sent none. timings is normalised to milliseconds
    (core/remote/server_timings.py).
    """

    kind: str
    prompt_tokens: Int64 | None
    output_tokens: Int64 | None
    first_byte_ns: Int64 | None
    chunks: Int64
    timings: dict[str, Any] | None = None

    @property
    def tokens_counted_from(self) -> str:
        """Where the reply's token count came from, in words."""
        claimed = (self.timings or {}).get("claimed_output_tokens")
        if self.output_tokens is not None:
            return "the server's usage"
        if isinstance(claimed, int):
            return (
                f"chunks, one token each: the server claimed {claimed:,} tokens, more than were asked "
                f"for or than the text that arrived can hold"
            )
        return "chunks, one token each: the server sent no usage"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class CpuUsage:
    """The engine's CPU time over the reply's compute (every thread of its process) against wall time x threads, and
    its own counters over the same time (core/timing/engine_counters.py): major page faults (a weight read from disk),
    preemptions (involuntary context switches: a thread descheduled for another program), and its garbage collections.

    token_major_faults and token_preemptions run beside the tokens (token 0's cover the prefill); gc_pauses are
    (start, duration) in perf_counter_ns; disk_read_bytes: read from storage, faults' read-ahead included. Empty where
    not counted (a chat saved before they were).
    """

    cpu_s: Seconds
    wall_s: Seconds
    threads: Int64
    major_faults: Int64 = 0
    minor_faults: Int64 = 0
    preemptions: Int64 = 0
    token_major_faults: TokenIds = field(default_factory=list)
    token_preemptions: TokenIds = field(default_factory=list)
    gc_pauses: list[tuple[Int64, Int64]] = field(default_factory=list)
    disk_read_bytes: Int64 | None = None  # what the engine read from storage over the reply (/proc/self/io)
    # What other programs used of the machine's CPUs over the reply (/proc/stat less this process), of how many.
    others_cpu_s: Seconds | None = None
    cores: Int64 | None = None
    memory_available_bytes: Int64 | None = None  # MemAvailable as the reply ended (/proc/meminfo)
    # Passes that first packed what a load left in the file's layout (core/model/idle_packing.py): (start, duration).
    packing_pauses: list[tuple[Int64, Int64]] = field(default_factory=list)

    @property
    def others_share(self) -> float | None:
        """The share of the machine's cores other programs used over the reply; None where not measured."""
        if self.others_cpu_s is None or not self.cores or self.wall_s <= 0:
            return None
        return min(self.others_cpu_s / (self.wall_s * self.cores), 1.0)


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class PromptReady:
    """The prompt was built, checked and tokenised in the engine; the reply is about to be computed.

    notice: a note for the user (older turns left out to fit the context), or None; decode_loop: the loop
    that will run it.
    """

    prompt_tokens: int
    notice: str | None
    decode_loop: str
    timestamp_ns: int


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ReplyRefused:
    """The reply could not start (the prompt does not fit, no model is loaded); nothing was generated."""

    message: str


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class PromptCacheReport:
    """How much of the prompt came from the prompt cache, and in one line why the rest did not.

    cached_tokens: None where a server reported nothing (never inferred); break_at: the prompt token where
    reuse of a cached history stopped, or None; source: who counted (Latency Lab's own cache, or the field a
    server reported it in).
    """

    prompt_tokens: Int64
    cached_tokens: Int64 | None
    reason: str
    break_at: Int64 | None = None
    source: str = "local"
    timestamp_ns: Int64 | None = None  # locally: when the cached part was in place and prefill of the rest began
    memory_bytes: Int64 | None = None  # locally: the prompt cache's memory (live KV allocation and saved chats)
    # Locally, what happened: "hit" (the history reused), "broke" (reuse stopped at break_at), "evicted", "other" (the
    # cache held another chat), "new" (a chat's first message: it had no history to reuse), "empty" (nothing cached
    # since the load) or "off"; "" from a server or an older chat.
    status: str = ""

    @property
    def prefilled_tokens(self) -> int | None:
        return None if self.cached_tokens is None else self.prompt_tokens - self.cached_tokens


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class SharingReport:
    """How many other requests shared the server with a metered one (the proxy counts those passing through it),
    and what the same model's requests that ran alone measured, to weigh the sharing against.

    alone_tpot_s: the median TPOT of the latest requests to the same model that ran with no other in flight (through
    the proxy), None where none did; alone_count: how many that median is of.
    """

    others_at_start: Int64
    others_most: Int64
    alone_tpot_s: Seconds | None = None
    alone_count: Int64 = 0


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class SpeculationReport:
    """Speculative decoding over the reply: how tokens were drafted, how many the model checked and kept.

    passes counts the verify passes (each checks the drafts of one step in one pass over the weights); a step with
    nothing to draft is an ordinary decode step and not counted. note says why speculation did not run, where it
    was asked for and could not.
    """

    method: str  # "ngram" (prompt lookup), or "server" (a server's own counts)
    drafted: Int64
    accepted: Int64
    passes: Int64 | None  # None where a server did not say
    note: str | None = None
    # Locally, what speculation cost this reply: its verify passes (drafting included), and its ordinary decode steps
    # (steps with nothing to draft), each with their count. None where not measured (a server, an older chat).
    verify_s: Seconds | None = None
    steps: Int64 | None = None
    step_s: Seconds | None = None
    # Locally, per verify pass: (the first reply token it gave, drafts it checked, drafts it rejected).
    pass_marks: Annotated[list[tuple[Int64, Int64, Int64]], Meta(max_length=MAX_TOKENS_PER_REPLY)] = field(
        default_factory=list
    )

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    @property
    def saved_s(self) -> float | None:
        """Time speculation saved over the reply (negative: what it cost): the tokens the verify passes gave, at the
        reply's own ordinary step time, less what the passes took. None without a pass or two ordinary steps to
        weigh them against."""
        if not self.passes or not self.steps or self.steps < 2 or self.step_s is None or self.verify_s is None:
            return None
        return (self.accepted + self.passes) * self.step_s / self.steps - self.verify_s

    @property
    def speedup(self) -> float | None:
        """How many times faster decode ran than the reply's own ordinary steps would have made it: its verify passes
        and ordinary steps, against the same with the passes' tokens made at the ordinary step's time. None where
        saved_s is."""
        saved = self.saved_s
        spent = (self.verify_s or 0.0) + (self.step_s or 0.0)
        return (spent + saved) / spent if saved is not None and spent > 0 else None


# Every event a reply can produce, for type checks and dispatch.
ReplyEventKind = (
    PromptReady
    | ComputeStarted
    | PrefillProgress
    | PromptCacheReport
    | TokenEvent
    | ServerReport
    | CpuUsage
    | SpeculationReport
    | FinishedEvent
    | ReplyRefused
)
