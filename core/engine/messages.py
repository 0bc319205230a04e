"""The engine's requests and events: plain, picklable data with no torch types, so they cross a process boundary."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.model.facts import ModelFacts
from core.timing.events import ReplyEventKind

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
    chat_id: str | None = None  # the chat this reply continues: whose prompt cache it uses


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
class RunRace:
    """A race (core/race): one prompt, two configurations; config is RaceConfig.to_dict()."""

    race_id: int
    config: dict
    trust_remote_code: bool = False
    allow_pickle: bool = False
    api_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class StopRace:
    race_id: int


@dataclass(frozen=True)
class Shutdown:
    """Stop everything and end the engine."""


# -- events: the engine to the window -----------------------------------------------------------


@dataclass(frozen=True)
class ModelProgress:
    fraction: float
    message: str


@dataclass(frozen=True)
class ModelReady:
    """What the window shows of a loaded model: its describe() (with this CPU's ceilings) and the decode loop it
    would get."""

    facts: ModelFacts
    lean_refusal: str | None  # why the lean loop does not cover this model, or None

    @property
    def name(self) -> str:
        return self.facts.model


@dataclass(frozen=True)
class ModelFailed:
    message: str


@dataclass(frozen=True)
class ReplyEvent:
    """One event of one reply, as core.timing.events defines it: the same vocabulary on both sides of the pipe.

    As vLLM's EngineCoreOutput carries a request id over its process boundary, this carries the reply's id.
    """

    reply_id: int
    event: ReplyEventKind


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
class RaceProgress:
    race_id: int
    message: str


@dataclass(frozen=True)
class RaceStarted:
    """A side's reply (or both, "AB", in a live race) started: its request start, the zero of its clock."""

    race_id: int
    sides: str
    request_start_ns: int


@dataclass(frozen=True)
class RaceReplyEvent:
    """One event of one side's reply, as ReplyEvent carries a chat reply's."""

    race_id: int
    side: str
    event: ReplyEventKind


@dataclass(frozen=True)
class RaceFinished:
    """The race, finished or stopped: its file's JSON text (core/race/document.py), what the window plays back."""

    race_id: int
    document: str


@dataclass(frozen=True)
class RaceFailed:
    race_id: int
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
