"""The engine's requests and events: plain, picklable data with no torch types, so they cross a process boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.backend.load_options import DEFAULT_LOAD_OPTIONS, LoadOptions
from core.model.facts import ModelFacts
from core.timing.events import ReplyEventKind

if TYPE_CHECKING:  # the window imports these messages: the lab's and race's modules load with their jobs
    from core.lab.config import LabConfig
    from core.lab.results import LabResults
    from core.race.config import RaceConfig
    from core.race.runner import RaceResult
    from core.settings import GenerationSettings

# -- requests: the window (or a CLI) to the engine ----------------------------------------------


@dataclass(frozen=True)
class LoadModel:
    """Load the chat's model (one at a time, in order with the replies)."""

    spec: str | None
    dtype: str
    device: str = "cpu"
    options: LoadOptions = DEFAULT_LOAD_OPTIONS


@dataclass(frozen=True)
class ReplyJob:
    """One reply. messages are (role, content) pairs."""

    system_prompt: str
    messages: tuple[tuple[str, str], ...]
    settings: GenerationSettings
    request_start_ns: int
    ignore_eos: bool = False  # decode exactly max_new_tokens (benchmarks compare equal lengths)
    streaming: bool = True  # a remote reply asks the server for stream: false when off
    chat_id: str | None = None  # the chat this reply continues: whose prompt cache it uses


@dataclass(frozen=True)
class LabJob:
    """A lab run (core/lab): its sweeps over one model, each row sent as it is measured."""

    config: LabConfig
    options: LoadOptions = DEFAULT_LOAD_OPTIONS


@dataclass(frozen=True)
class RaceJob:
    """A race (core/race): one prompt, two configurations. Each side's server timeout is its own."""

    config: RaceConfig
    options: LoadOptions = DEFAULT_LOAD_OPTIONS


# Every kind of work the engine does for a job id. A new kind is a spec here and a runner in core/engine/jobs.py.
JobSpec = ReplyJob | LabJob | RaceJob


@dataclass(frozen=True)
class StartJob:
    """Start a job. As vLLM V1's one request type over its process boundary: one id space for every kind of job."""

    job_id: int
    spec: JobSpec


@dataclass(frozen=True)
class StopJob:
    """Stop (or cancel) a job, whatever its kind: it ends as soon as it can, still with its JobDone or JobFailed."""

    job_id: int


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
class Progress:
    """A lab run's or a race's step, in words; fraction is None where the step has no share of the whole."""

    message: str
    fraction: float | None = None


@dataclass(frozen=True)
class RowMeasured:
    """A lab run's row, as it is measured: shown at once."""

    sweep: str
    row: dict


@dataclass(frozen=True)
class SidesStarted:
    """A race side's reply (or both, "AB", in a live race) started: its request start, the zero of its clock."""

    sides: str
    request_start_ns: int


@dataclass(frozen=True)
class SideEvent:
    """One event of one race side's reply: the reply vocabulary, with the side it belongs to."""

    side: str
    event: ReplyEventKind


# What a running job reports: a reply its own events (core.timing.events), a lab run or a race the ones above.
JobUpdate = ReplyEventKind | Progress | RowMeasured | SidesStarted | SideEvent


@dataclass(frozen=True)
class JobEvent:
    """One event of one job. As vLLM's EngineCoreOutput carries a request id over its process boundary, this carries
    the job's id; a reply's events end with its FinishedEvent or ReplyRefused, then JobDone."""

    job_id: int
    event: JobUpdate


@dataclass(frozen=True)
class JobDone:
    """A job ended (finished, or stopped): a lab run's results, a race's (stopped or not), None for a reply."""

    job_id: int
    result: LabResults | RaceResult | None = None


@dataclass(frozen=True)
class JobFailed:
    """A job could not run or went wrong: in words, for the user."""

    job_id: int
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


# Everything that crosses the pipe, one way and the other.
Request = LoadModel | StartJob | StopJob | Shutdown
Event = ModelProgress | ModelReady | ModelFailed | JobEvent | JobDone | JobFailed | EngineStopped | Heartbeat
# What the window hands on (a heartbeat only says the engine is alive; anything else off the pipe is dropped).
EVENTS = (ModelProgress, ModelReady, ModelFailed, JobEvent, JobDone, JobFailed, EngineStopped)


@dataclass
class Delivered:
    """An event as the window received it: arrival_ns is perf_counter_ns() when it was read off the pipe.

    perf_counter_ns is CLOCK_MONOTONIC on Linux, one clock for both processes, so engine stamps and
    arrival stamps subtract directly.
    """

    event: Event | ReplyEventKind  # the window hands on a reply's own events with their arrival stamps too
    arrival_ns: int = field(default=0)
