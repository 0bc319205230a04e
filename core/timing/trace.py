"""A reply's trace: its timed token events and finish, turned into metrics on demand."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.timing.bounds import Fraction, Int64, Seconds, StopReasonValue, TokenIds
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PrefillProgress,
    PromptCacheReport,
    PromptReady,
    ReplyEventKind,
    ServerReport,
    SharingReport,
    SpeculationReport,
    TokenEvent,
)
from core.timing.finding import Finding
from core.timing.metrics import LatencyMetrics, LatencySummary, compute_metrics, summarize


@dataclass
class ReplyTrace:
    """The trace of one reply: feed it every event, read metrics whenever.

    Its fields are what a chat saves, an export holds and a file is checked against (core/timing/trace_codec.py
    reads them, with their types from core/timing/bounds.py): a field added here is saved, exported, loaded and
    validated with no other change.
    """

    request_start_ns: Int64
    prompt_tokens: Int64
    token_ids: TokenIds = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)
    timestamps_ns: list[Int64] = field(default_factory=list)
    # When each token reached the window (perf_counter_ns, the same clock as the engine's stamps); empty
    # where no window received them (the CLI, the lab).
    arrivals_ns: list[Int64] = field(default_factory=list)
    stop_reason: StopReasonValue | None = None
    error: str | None = None
    tail_text: str = ""
    # The prompt's pass, layer by layer: (perf_counter_ns, fraction of the decoder layers done); it
    # reaches 1.0 exactly when the pass ends, and stops short of it when a stop abandoned the pass.
    prefill_progress: list[tuple[Int64, Fraction]] = field(default_factory=list)
    # The waterfall's stamps (perf_counter_ns; None or empty where not recorded): the prompt built and
    # tokenised in the engine, the reply's job begun on the compute thread, the finish made in the
    # engine, each token first painted in the window (streaming only), and the Stop pressed.
    prompt_ready_ns: Int64 | None = None
    compute_started_ns: Int64 | None = None
    finished_ns: Int64 | None = None
    painted_ns: list[Int64] = field(default_factory=list)
    stop_requested_ns: Int64 | None = None
    # Over a network (empty for a local model): the chunk each token came in, and which tokens are reasoning.
    chunk_of: list[Int64] = field(default_factory=list)
    reasoning_indices: list[Int64] = field(default_factory=list)
    # Speculative decoding: the tokens that were accepted drafts (their intervals are near zero), and the report.
    drafted_indices: list[Int64] = field(default_factory=list)
    speculation: SpeculationReport | None = None
    # The reports as the reply made them, None where it made none: a server's own account (remote only), the
    # prompt cache's, and the engine's CPU time over the reply's compute (core/timing/cpu_share.py).
    server: ServerReport | None = None
    cache: PromptCacheReport | None = None
    cpu: CpuUsage | None = None
    # Through the proxy: how many other requests shared the server while this one ran (core/proxy/sharing.py).
    sharing: SharingReport | None = None
    # Where a window showed the reply: the window process's own CPU time over the same reply.
    window_cpu_s: Seconds | None = None
    # Why the reply was as slow as it was, ranked, each cause with its evidence (core/diagnosis); None where it was not
    # diagnosed (a chat saved before diagnoses were made), and one "healthy" finding where nothing slowed it.
    diagnosis: list[Finding] | None = None

    def record(self, event: ReplyEventKind, arrival_ns: int | None = None) -> None:
        """Keep what the event says; arrival_ns is when a token reached the window (None elsewhere)."""
        if isinstance(event, TokenEvent):  # first: a reply's events are nearly all tokens
            self.token_ids.append(event.token_id)
            self.token_texts.append(event.text)
            self.timestamps_ns.append(event.timestamp_ns)
            if arrival_ns is not None:
                self.arrivals_ns.append(arrival_ns)
            if event.chunk is not None:
                self.chunk_of.append(event.chunk)
            if event.reasoning:
                self.reasoning_indices.append(len(self.timestamps_ns) - 1)
            if event.drafted:
                self.drafted_indices.append(len(self.timestamps_ns) - 1)
        elif isinstance(event, PromptReady):
            self.prompt_tokens = event.prompt_tokens
            self.prompt_ready_ns = event.timestamp_ns
        elif isinstance(event, ServerReport):
            self.server = event
            if event.prompt_tokens is not None:
                self.prompt_tokens = event.prompt_tokens
        elif isinstance(event, CpuUsage):
            self.cpu = event
        elif isinstance(event, PromptCacheReport):
            self.cache = event
        elif isinstance(event, SpeculationReport):
            self.speculation = event
        elif isinstance(event, PrefillProgress):
            self.prefill_progress.append((event.timestamp_ns, event.fraction))
        elif isinstance(event, ComputeStarted):
            self.compute_started_ns = event.timestamp_ns
        elif isinstance(event, FinishedEvent):
            self.finished_ns = event.timestamp_ns
            self.stop_reason = event.stop_reason.value
            self.error = event.error
            self.tail_text = event.tail_text

    # What the window and the tests read most of the reports, None where the report was not made.
    @property
    def cached_tokens(self) -> int | None:
        return self.cache.cached_tokens if self.cache else None

    @property
    def cache_reason(self) -> str | None:
        return self.cache.reason if self.cache else None

    @property
    def cache_break_at(self) -> int | None:
        return self.cache.break_at if self.cache else None

    @property
    def cache_source(self) -> str | None:
        return self.cache.source if self.cache else None

    @property
    def first_byte_ns(self) -> int | None:
        return self.server.first_byte_ns if self.server else None

    @property
    def cpu_share(self) -> float | None:
        """The engine's CPU time over wall x threads during the reply; None where not measured (a server)."""
        from core.timing.cpu_share import share

        if self.cpu is None:
            return None
        return share(self.cpu.cpu_s, self.cpu.wall_s, self.cpu.threads)

    @property
    def window_cpu_share(self) -> float | None:
        """The window process's CPU time over the reply's wall time, in cores (0.2 = a fifth of one core)."""
        stamps = self.timestamps_ns
        if self.window_cpu_s is None or not stamps:
            return None
        wall_s = (stamps[-1] - self.request_start_ns) / 1e9
        return self.window_cpu_s / wall_s if wall_s > 0 else None

    @property
    def prefilled_tokens(self) -> int | None:
        """Prompt tokens actually computed: the prompt less what the cache gave; None where that is unknown."""
        return None if self.cached_tokens is None else max(self.prompt_tokens - self.cached_tokens, 0)

    @property
    def output_tokens(self) -> int:
        """Tokens generated: the server's usage count where a server gave one (a chunk is not a token)."""
        if self.server is not None and self.server.output_tokens is not None:
            return self.server.output_tokens
        return len(self.timestamps_ns)

    @property
    def chunks(self) -> int | None:
        """How many chunks the reply came in over the wire; None for a local model."""
        return len(set(self.chunk_of)) if self.chunk_of else (0 if self.server is not None else None)

    def chunk_stamps_ns(self) -> list[int]:
        """The stamps the ITLs are taken between: each chunk's arrival over a network, each token locally."""
        if not self.chunk_of:
            return list(self.timestamps_ns)
        stamps, previous = [], None
        for chunk, stamp in zip(self.chunk_of, self.timestamps_ns):
            if chunk != previous:
                stamps.append(stamp)
                previous = chunk
        return stamps

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    @property
    def text(self) -> str:
        if not self.reasoning_indices:
            return "".join(self.token_texts) + self.tail_text
        reasoning = set(self.reasoning_indices)
        return "".join(text for index, text in enumerate(self.token_texts) if index not in reasoning) + self.tail_text

    @property
    def reasoning_text(self) -> str:
        return "".join(self.token_texts[index] for index in self.reasoning_indices)

    def token_times_s(self) -> list[float]:
        return [(stamp - self.request_start_ns) / 1e9 for stamp in self.timestamps_ns]

    def summary(self) -> LatencySummary:
        stamps = self.timestamps_ns
        return summarize(
            self.request_start_ns,
            stamps[0] if stamps else None,
            stamps[-1] if stamps else None,
            self.output_tokens if stamps else 0,
            self.prompt_tokens,
            self.prefilled_tokens,
        )

    def delivery_delays_s(self) -> list[float]:
        """Per token, engine put() stamp to arrival in the window; [] when arrivals were not recorded."""
        if len(self.arrivals_ns) != len(self.timestamps_ns):
            return []
        return [(arrival - stamp) / 1e9 for stamp, arrival in zip(self.timestamps_ns, self.arrivals_ns)]

    def metrics(self) -> LatencyMetrics:
        return compute_metrics(
            self.request_start_ns,
            self.timestamps_ns,
            self.prompt_tokens,
            output_tokens=self.output_tokens,
            itl_stamps_ns=self.chunk_stamps_ns(),
            prefilled_tokens=self.prefilled_tokens,
        )
