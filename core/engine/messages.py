"""The engine's requests and events: plain, picklable data with no torch types, so they cross a process boundary."""

from __future__ import annotations

from dataclasses import dataclass, field

# -- requests: the window (or a CLI) to the engine ----------------------------------------------


@dataclass(frozen=True)
class LoadModel:
    spec: str | None
    dtype: str
    device: str = "cpu"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    # A server's key travels only over the private pipe and is never shown (repr=False keeps it out of logs).
    api_key: str | None = field(default=None, repr=False)
    server_timeout_s: float | None = None


@dataclass(frozen=True)
class StartReply:
    """One reply. messages are (role, content) pairs; settings is GenerationSettings.to_dict()."""

    reply_id: int
    system_prompt: str
    messages: tuple[tuple[str, str], ...]
    settings: dict
    request_start_ns: int
    ignore_eos: bool = False  # decode exactly max_new_tokens (benchmarks compare equal lengths)
    streaming: bool = True  # a remote reply asks the server for stream: false when off


@dataclass(frozen=True)
class StopReply:
    reply_id: int


@dataclass(frozen=True)
class RunLab:
    lab_id: int
    config: dict  # LabConfig's fields
    trust_remote_code: bool = False
    allow_pickle: bool = False
    api_key: str | None = field(default=None, repr=False)
    server_timeout_s: float | None = None


@dataclass(frozen=True)
class CancelLab:
    lab_id: int


@dataclass(frozen=True)
class Shutdown:
    """Stop everything and end the engine."""


# -- events: the engine to the window -----------------------------------------------------------


@dataclass(frozen=True)
class ModelProgress:
    fraction: float
    message: str


@dataclass(frozen=True)
class ModelLoaded:
    """What the window shows of a loaded model: LoadedModel.describe() plus the decode loop it would get."""

    facts: dict
    lean_refusal: str | None  # why the lean loop does not cover this model, or None

    @property
    def name(self) -> str:
        return self.facts["model"]


@dataclass(frozen=True)
class ModelFailed:
    message: str


@dataclass(frozen=True)
class ReplyStarted:
    """The prompt was built and tokenised; prompt_ready_ns stamps that moment (perf_counter_ns)."""

    reply_id: int
    prompt_tokens: int
    notice: str | None
    decode_loop: str
    prompt_ready_ns: int | None = None


@dataclass(frozen=True)
class ReplyComputeStarted:
    """The reply's job began on the engine's compute thread, after any wait behind other work there."""

    reply_id: int
    timestamp_ns: int


@dataclass(frozen=True)
class ReplyProgress:
    """The prompt's pass reached a decoder layer: layers_done of layers_total; 100% when the pass ends."""

    reply_id: int
    layers_done: int
    layers_total: int
    timestamp_ns: int

    @property
    def fraction(self) -> float:
        return self.layers_done / self.layers_total if self.layers_total else 1.0


@dataclass(frozen=True)
class ReplyToken:
    """One token, stamped with perf_counter_ns() inside the engine's streamer put() (over a network: on
    the chunk's arrival, before parsing; chunk says which chunk brought it)."""

    reply_id: int
    index: int
    token_id: int
    text: str
    timestamp_ns: int
    chunk: int | None = None
    reasoning: bool = False


@dataclass(frozen=True)
class ReplyServerReport:
    """A remote server's own account of the reply (core.timing.events.ServerReport), sent before the finish."""

    reply_id: int
    server_kind: str
    prompt_tokens: int | None
    output_tokens: int | None
    first_byte_ns: int | None
    chunks: int
    timings: dict | None


@dataclass(frozen=True)
class ReplyFinished:
    reply_id: int
    stop_reason: str
    output_tokens: int
    timestamp_ns: int
    tail_text: str = ""
    error: str | None = None


@dataclass(frozen=True)
class ReplyRefused:
    """The reply could not start (the prompt does not fit, no model is loaded); nothing was generated."""

    reply_id: int
    message: str


@dataclass(frozen=True)
class LabProgress:
    lab_id: int
    fraction: float
    message: str


@dataclass(frozen=True)
class LabRow:
    lab_id: int
    sweep: str
    row: dict


@dataclass(frozen=True)
class LabFinished:
    lab_id: int
    results: dict  # LabResults.to_dict()


@dataclass(frozen=True)
class LabFailed:
    lab_id: int
    message: str


@dataclass(frozen=True)
class EngineStopped:
    """Made on the window's side when the engine process is gone (or was ended for not answering): how, in words."""

    description: str
    expected: bool = False


@dataclass(frozen=True)
class Heartbeat:
    """The engine process is alive and answering: sent when it has had nothing else to send for a moment. The
    window's end takes it in (a silent engine is a stuck one) and hands it on to no one."""


@dataclass
class Delivered:
    """An event as the window received it: arrival_ns is perf_counter_ns() when it was read off the pipe.

    perf_counter_ns is CLOCK_MONOTONIC on Linux, one clock for both processes, so engine stamps and
    arrival stamps subtract directly.
    """

    event: object
    arrival_ns: int = field(default=0)
