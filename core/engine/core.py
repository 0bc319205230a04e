"""The engine's work, wherever it runs: load a model and run jobs (replies, lab runs, races), each reported as events.

handle() never blocks: loads and replies run in order on one job thread, lab runs and races on another (so a
reply can run between two lab measurements, as before), and all model work hops onto the process's
compute thread. A stop takes effect at once through the job's own event; every job ends in one JobDone or JobFailed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from core.compute_thread import ComputeThread
from core.engine.jobs import kind_of
from core.engine.messages import (
    Event,
    JobDone,
    JobEvent,
    JobFailed,
    JobUpdate,
    LoadModel,
    ModelFailed,
    ModelProgress,
    ModelReady,
    Request,
    Shutdown,
    StartJob,
    StopJob,
)
from core.errors import LatencyLabError

if TYPE_CHECKING:
    from core.backend.served_model import ServedModel
    from core.engine.race_models import RaceModels

Emit = Callable[[Event], None]


class EngineCore:
    def __init__(self, emit: Emit):
        self._emit = emit
        self.loaded: ServedModel | None = None  # the chat's model, local or a server's
        self.extra_logits_processors: tuple = ()  # a seam for in-process fault-injection tests
        self.lab_model: tuple[tuple, ServedModel] | None = None  # the last lab run's, by its key
        self._threads = {
            "replies": ComputeThread("latencylab-engine-replies"),
            "measurements": ComputeThread("latencylab-engine-lab"),
        }
        self._stops: dict[int, threading.Event] = {}  # every running job's, whatever its kind
        self._race_models: RaceModels | None = None  # made at the first race
        self._lock = threading.Lock()

    def handle(self, request: Request) -> None:
        if isinstance(request, StopJob):
            with self._lock:
                stop = self._stops.get(request.job_id)
            if stop is not None:
                stop.set()
        elif isinstance(request, StartJob):
            stop = threading.Event()  # registered now, so a StopJob right behind it is never lost
            with self._lock:
                self._stops[request.job_id] = stop
            self._threads[kind_of(request.spec).thread].submit(lambda: self._run(request, stop))
        elif isinstance(request, LoadModel):
            self._threads["replies"].submit(lambda: self._load(request))
        elif isinstance(request, Shutdown):
            self.stop_everything()
        else:
            raise TypeError(f"the engine does not know the request {type(request).__name__}")

    def adopt(self, loaded: ServedModel) -> None:
        """Use a model loaded elsewhere in this process (tests share one across windows)."""
        self.loaded = loaded
        self._emit(self._loaded_event(loaded))

    def race_models(self) -> RaceModels:
        """The models races loaded, kept for the next race (made at the first)."""
        from core.engine.race_models import RaceModels

        if self._race_models is None:
            self._race_models = RaceModels()
        return self._race_models

    def stop_everything(self) -> None:
        with self._lock:
            for event in self._stops.values():
                event.set()

    def close(self, timeout_s: float) -> bool:
        """Stop every job and end the job threads; False when one is still inside work it cannot leave."""
        self.stop_everything()
        replies_ended = self._threads["replies"].close(timeout_s)
        return self._threads["measurements"].close(timeout_s / 2) and replies_ended

    # -- jobs -----------------------------------------------------------------------------------

    def _run(self, start: StartJob, stop: threading.Event) -> None:
        job_id = start.job_id

        def update(event: JobUpdate) -> None:
            self._emit(JobEvent(job_id, event))

        try:
            result = kind_of(start.spec).run(self, start.spec, stop, update)
        except LatencyLabError as error:
            self._emit(JobFailed(job_id, str(error)))
        except Exception as error:  # noqa: BLE001 - the window must stay usable whatever went wrong
            self._emit(JobFailed(job_id, f"{type(error).__name__}: {error}"))
        else:
            self._emit(JobDone(job_id, result))
        finally:
            with self._lock:
                self._stops.pop(job_id, None)

    def _load(self, request: LoadModel) -> None:
        from core.backend.choice import load_any

        try:
            loaded = load_any(
                request.spec,
                device=request.device,
                dtype=request.dtype,
                progress=lambda fraction, message: self._emit(ModelProgress(fraction, message)),
                options=request.options,
            )
        except LatencyLabError as error:
            self._emit(ModelFailed(str(error)))
            return
        except Exception as error:  # noqa: BLE001 - the window must stay usable whatever went wrong
            self._emit(ModelFailed(f"{type(error).__name__}: {error}"))
            return
        replaced, self.loaded = self.loaded, loaded
        if replaced is not None and replaced is not loaded:
            replaced.close()  # a server's kept-alive connections go now, not when the object is collected
        self._emit(self._loaded_event(loaded))

    @staticmethod
    def _loaded_event(loaded: ServedModel) -> ModelReady:
        facts = loaded.describe()
        if loaded.device == "cpu":
            from core.roofline.ceilings import cached_ceilings

            ceilings = cached_ceilings()  # a quiet measurement of this CPU, if the Lab has made one
            if ceilings is not None:
                facts = replace(facts, ceilings=ceilings.to_dict())
        from core.cache_file import take_notices

        damaged = take_notices()  # cache files the load or the ceilings set aside: said once, in the window
        if damaged:
            facts = replace(facts, notice="; ".join(filter(None, (facts.notice, *damaged))))
        return ModelReady(facts, loaded.loop_refusal())
