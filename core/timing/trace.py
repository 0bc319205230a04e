"""A record of one reply: its token events and finish, turned into metrics on demand."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.timing.events import ComputeStarted, FinishedEvent, PrefillProgress, TokenEvent
from core.timing.metrics import LatencyMetrics, LatencySummary, compute_metrics, summarize


@dataclass
class GenerationTrace:
    """Recorder for one generation: feed it every event, read metrics whenever."""

    request_start_ns: int
    prompt_tokens: int
    token_ids: list[int] = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)
    timestamps_ns: list[int] = field(default_factory=list)
    # When each token reached the window (perf_counter_ns, the same clock as the engine's stamps); empty
    # where no window received them (the CLI, the lab).
    arrivals_ns: list[int] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None
    tail_text: str = ""
    # The prompt's pass, layer by layer: (perf_counter_ns, fraction of the decoder layers done); it
    # reaches 1.0 exactly when the pass ends, and stops short of it when a stop abandoned the pass.
    prefill_progress: list[tuple[int, float]] = field(default_factory=list)
    # The waterfall's stamps (perf_counter_ns; None or empty where not recorded): the prompt built and
    # tokenised in the engine, the reply's job begun on the compute thread, the finish made in the
    # engine, each token first painted in the window (streaming only), and the Stop pressed.
    prompt_ready_ns: int | None = None
    compute_started_ns: int | None = None
    finished_ns: int | None = None
    painted_ns: list[int] = field(default_factory=list)
    stop_requested_ns: int | None = None

    def record(self, event: TokenEvent | FinishedEvent | PrefillProgress | ComputeStarted,
               arrival_ns: int | None = None) -> None:
        if isinstance(event, PrefillProgress):
            self.prefill_progress.append((event.timestamp_ns, event.fraction))
        elif isinstance(event, ComputeStarted):
            self.compute_started_ns = event.timestamp_ns
        elif isinstance(event, TokenEvent):
            self.token_ids.append(event.token_id)
            self.token_texts.append(event.text)
            self.timestamps_ns.append(event.timestamp_ns)
            if arrival_ns is not None:
                self.arrivals_ns.append(arrival_ns)
        else:
            self.finished_ns = event.timestamp_ns
            self.stop_reason = event.stop_reason.value
            self.error = event.error
            self.tail_text = event.tail_text

    @property
    def output_tokens(self) -> int:
        return len(self.timestamps_ns)

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    @property
    def text(self) -> str:
        return "".join(self.token_texts) + self.tail_text

    def token_times_s(self) -> list[float]:
        return [(stamp - self.request_start_ns) / 1e9 for stamp in self.timestamps_ns]

    def summary(self) -> LatencySummary:
        stamps = self.timestamps_ns
        return summarize(self.request_start_ns, stamps[0] if stamps else None, stamps[-1] if stamps else None,
                         len(stamps), self.prompt_tokens)

    def delivery_delays_s(self) -> list[float]:
        """Per token, engine put() stamp to arrival in the window; [] when arrivals were not recorded."""
        if len(self.arrivals_ns) != len(self.timestamps_ns):
            return []
        return [(arrival - stamp) / 1e9 for stamp, arrival in zip(self.timestamps_ns, self.arrivals_ns)]

    def metrics(self) -> LatencyMetrics:
        return compute_metrics(self.request_start_ns, self.timestamps_ns, self.prompt_tokens)
