"""The engine's runners, one a kind of job: each takes its spec, reports updates as it goes, and returns its result.

A new kind of job is a spec in messages.py and a runner here, registered in RUNNERS with the job thread it runs on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.chats.template_render import TemplateInterrupted
from core.engine.messages import (
    JobSpec,
    JobUpdate,
    LabJob,
    Progress,
    RaceJob,
    ReplyJob,
    RowMeasured,
    SideEvent,
    SidesStarted,
)
from core.errors import LatencyLabError
from core.timing.events import FinishedEvent, PromptReady, ReplyRefused, StopReason

if TYPE_CHECKING:
    from core.backend.served_model import ServedModel
    from core.engine.race_models import RaceModels

Update = Callable[[JobUpdate], None]


class JobHost(Protocol):
    """What a runner may use of the engine that runs it (core/engine/core.py's EngineCore)."""

    loaded: ServedModel | None  # the chat's model
    extra_logits_processors: tuple
    lab_model: tuple[tuple, ServedModel] | None  # the last lab run's, by (model, dtype, device)

    def race_models(self) -> RaceModels: ...


Runner = Callable[[JobHost, Any, threading.Event, Update], Any]


@dataclass(frozen=True)
class JobKind:
    run: Runner
    # Replies run in order on one thread; lab runs and races on another, so a reply can run between two lab
    # measurements, and a race and a lab run never overlap (each measures the machine alone).
    thread: str


def run_reply(engine: JobHost, spec: ReplyJob, stop: threading.Event, update: Update) -> None:
    """The reply's events, each as it happens; it ends with its FinishedEvent or ReplyRefused."""
    from core.chats.session import Message
    from core.generation.request import ReplyRequest

    loaded = engine.loaded
    if loaded is None:
        update(ReplyRefused("no model is loaded."))
        return
    try:
        processors = list(engine.extra_logits_processors)
        if spec.ignore_eos:
            processors.extend(loaded.end_suppressors())
        request = ReplyRequest(
            spec.system_prompt,
            tuple(Message(role, text) for role, text in spec.messages),
            spec.settings,
            spec.request_start_ns,
            stop,
            tuple(processors),
            spec.chat_id,
        )
        generation, prompt = loaded.prepare(request, streaming=spec.streaming, ignore_eos=spec.ignore_eos)
    except TemplateInterrupted:
        # Stop came while the prompt was built: as at any other phase, the reply ends stopped with no token and
        # the message stays in the chat (a refusal would hand it back to the message box).
        update(PromptReady(0, None, "none: stopped before the prompt was built", time.perf_counter_ns()))
        update(FinishedEvent(StopReason.STOPPED, 0, time.perf_counter_ns()))
        return
    except LatencyLabError as error:
        update(ReplyRefused(str(error)))
        return
    except Exception as error:  # noqa: BLE001 - a tokenizer failure must reach the window
        update(ReplyRefused(f"could not build the prompt: {type(error).__name__}: {error}"))
        return
    update(PromptReady(prompt.prompt_tokens, prompt.notice, generation.decode_loop, time.perf_counter_ns()))
    generation.start(spec.request_start_ns)
    for event in generation:
        if isinstance(event, FinishedEvent):
            generation.join()  # the finish reaches the window only once the compute thread is free
        update(event)


def run_lab(engine: JobHost, spec: LabJob, stop: threading.Event, update: Update):
    """The lab's sweeps; its results (also when stopped part way)."""
    from core.backend.choice import load_any
    from core.lab.runner import LabObserver, run_lab

    config = spec.config
    wanted = (config.model, config.dtype, config.device)

    def load(model_spec, *, device, dtype, progress):
        loaded = load_any(model_spec, device=device, dtype=dtype, progress=progress, options=spec.options)
        if (model_spec, dtype, device) == wanted:  # kept, so running the lab again does not load it again
            engine.lab_model = (wanted, loaded)
        return loaded

    reusable = engine.lab_model[1] if engine.lab_model is not None and engine.lab_model[0] == wanted else None
    observer = LabObserver(
        progress=lambda fraction, message: update(Progress(message, fraction)),
        row_measured=lambda sweep, row: update(RowMeasured(sweep, dict(row))),
    )
    return run_lab(config, loaded=reusable, observer=observer, cancel=stop, loader=load)


def run_race(engine: JobHost, spec: RaceJob, stop: threading.Event, update: Update):
    """Both sides' replies, their events as they happen; the race's result (also when stopped)."""
    from dataclasses import replace

    from core.backend.choice import load_any
    from core.race.runner import RaceObserver
    from core.race.runner import run_race as race

    def load(side):
        options = replace(spec.options, server_timeout_s=side.server_timeout_s)
        progress = lambda fraction, message: update(Progress(f"{side.name}: {message}"))  # noqa: E731
        return load_any(side.model, device=side.device, dtype=side.dtype, progress=progress, options=options)

    observer = RaceObserver(
        progress=lambda message: update(Progress(message)),
        event=lambda side, event: update(SideEvent(side, event)),
        started=lambda sides, start_ns: update(SidesStarted(sides, start_ns)),
    )
    models = engine.race_models()
    return race(spec.config, lambda side: models.get(side, engine.loaded, load), cancel=stop, observer=observer)


RUNNERS: dict[type, JobKind] = {
    ReplyJob: JobKind(run_reply, "replies"),
    LabJob: JobKind(run_lab, "measurements"),
    RaceJob: JobKind(run_race, "measurements"),
}


def kind_of(spec: JobSpec) -> JobKind:
    return RUNNERS[type(spec)]
