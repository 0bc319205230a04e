"""The engine's work, wherever it runs: load a model, generate replies, run lab sweeps, each reported as events.

handle() never blocks: loads and replies run in order on one job thread, lab runs on another (so a
reply can run between two lab measurements, as before), and all model work hops onto the process's
compute thread. Stops and cancels take effect at once through each job's own event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.chats.template_render import TemplateInterrupted
from core.compute_thread import ComputeThread
from core.engine.messages import (
    CancelLab,
    LabFailed,
    LabFinished,
    LabProgress,
    LabRow,
    LoadModel,
    ModelFailed,
    ModelProgress,
    ModelReady,
    ReplyEvent,
    RunLab,
    RunRace,
    Shutdown,
    StartReply,
    StopRace,
    StopReply,
)
from core.errors import LatencyLabError
from core.timing.events import FinishedEvent, PromptReady, ReplyRefused, StopReason

if TYPE_CHECKING:
    from core.engine.race_job import RaceModels
    from core.model.loader import LoadedModel
    from core.remote.connect import RemoteModel

Emit = Callable[[object], None]


class EngineCore:
    def __init__(self, emit: Emit):
        self._emit = emit
        self.loaded: LoadedModel | RemoteModel | None = None  # the chat's model, local or a server's
        self.extra_logits_processors: tuple = ()  # a seam for in-process fault-injection tests
        self._reply_jobs = ComputeThread("latencylab-engine-replies")
        self._lab_jobs = ComputeThread("latencylab-engine-lab")
        self._stops: dict[int, threading.Event] = {}
        self._cancels: dict[int, threading.Event] = {}
        self._lab_model: LoadedModel | RemoteModel | None = None
        self._lab_model_key: tuple | None = None
        self._race_stops: dict[int, threading.Event] = {}
        self._race_models: RaceModels | None = None  # made at the first race
        self._lock = threading.Lock()

    def handle(self, request: object) -> None:
        if isinstance(request, StopReply):
            with self._lock:
                stop = self._stops.get(request.reply_id)
            if stop is not None:
                stop.set()
        elif isinstance(request, CancelLab):
            with self._lock:
                cancel = self._cancels.get(request.lab_id)
            if cancel is not None:
                cancel.set()
        elif isinstance(request, StartReply):
            reply_stop = threading.Event()  # registered now, so a StopReply right behind it is never lost
            with self._lock:
                self._stops[request.reply_id] = reply_stop
            self._reply_jobs.submit(lambda: self._reply(request, reply_stop))
        elif isinstance(request, LoadModel):
            self._reply_jobs.submit(lambda: self._load(request))
        elif isinstance(request, RunLab):
            cancel = threading.Event()
            with self._lock:
                self._cancels[request.lab_id] = cancel
            self._lab_jobs.submit(lambda: self._lab(request, cancel))
        elif isinstance(request, RunRace):
            # On the lab's job thread: a race and a lab run never overlap, so each measures the machine alone.
            race_stop = threading.Event()
            with self._lock:
                self._race_stops[request.race_id] = race_stop
            self._lab_jobs.submit(lambda: self._race(request, race_stop))
        elif isinstance(request, StopRace):
            with self._lock:
                stop = self._race_stops.get(request.race_id)
            if stop is not None:
                stop.set()
        elif isinstance(request, Shutdown):
            self.stop_everything()
        else:
            raise TypeError(f"the engine does not know the request {type(request).__name__}")

    def adopt(self, loaded) -> None:
        """Use a model loaded elsewhere in this process (tests share one across windows)."""
        self.loaded = loaded
        self._emit(self._loaded_event(loaded))

    def stop_everything(self) -> None:
        with self._lock:
            for event in (*self._stops.values(), *self._cancels.values(), *self._race_stops.values()):
                event.set()

    def close(self, timeout_s: float) -> bool:
        """Stop every job and end the job threads; False when one is still inside work it cannot leave."""
        self.stop_everything()
        replies_ended = self._reply_jobs.close(timeout_s)
        return self._lab_jobs.close(timeout_s / 2) and replies_ended

    # -- jobs -----------------------------------------------------------------------------------

    def _load(self, request: LoadModel) -> None:
        from core.backend.choice import load_any

        try:
            loaded = load_any(
                request.spec,
                device=request.device,
                dtype=request.dtype,
                progress=lambda fraction, message: self._emit(ModelProgress(fraction, message)),
                trust_remote_code=request.trust_remote_code,
                allow_pickle=request.allow_pickle,
                api_key=request.api_key,
                server_timeout_s=request.server_timeout_s,
            )
        except LatencyLabError as error:
            self._emit(ModelFailed(str(error)))
            return
        except Exception as error:  # noqa: BLE001 - the window must stay usable whatever went wrong
            self._emit(ModelFailed(f"{type(error).__name__}: {error}"))
            return
        self.loaded = loaded
        self._emit(self._loaded_event(loaded))

    @staticmethod
    def _loaded_event(loaded) -> ModelReady:

        if loaded.is_remote:
            return ModelReady(loaded.describe(), "the model runs on a server; its loop is the server's own")
        from core.generation.decode.choice import lean_loop_refusal

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
        return ModelReady(facts, lean_loop_refusal(loaded.model))

    def _reply(self, request: StartReply, stop: threading.Event) -> None:
        try:
            self._run_reply(request, stop)
        finally:
            with self._lock:
                self._stops.pop(request.reply_id, None)

    def _run_reply(self, request: StartReply, stop: threading.Event) -> None:
        from core.backend.choice import prepare_any
        from core.chats.session import Message
        from core.generation.request import ReplyRequest
        from core.settings import GenerationSettings

        reply_id, loaded = request.reply_id, self.loaded

        def emit(event) -> None:
            self._emit(ReplyEvent(reply_id, event))

        if loaded is None:
            emit(ReplyRefused("no model is loaded."))
            return
        try:
            processors = list(self.extra_logits_processors)
            from core.model.loader import LoadedModel

            if request.ignore_eos and isinstance(loaded, LoadedModel) and loaded.eos_token_ids:
                from transformers import SuppressTokensLogitsProcessor

                processors.append(SuppressTokensLogitsProcessor(sorted(loaded.eos_token_ids)))
            reply = ReplyRequest(
                request.system_prompt,
                tuple(Message(role, text) for role, text in request.messages),
                GenerationSettings(**request.settings),
                request.request_start_ns,
                stop,
                tuple(processors),
                request.chat_id,
            )
            generation, prompt = prepare_any(loaded, reply, streaming=request.streaming, ignore_eos=request.ignore_eos)
        except TemplateInterrupted:
            # Stop came while the prompt was built: as at any other phase, the reply ends stopped with no token and
            # the message stays in the chat (a refusal would hand it back to the message box).
            emit(PromptReady(0, None, "none: stopped before the prompt was built", time.perf_counter_ns()))
            emit(FinishedEvent(StopReason.STOPPED, 0, time.perf_counter_ns()))
            return
        except LatencyLabError as error:
            emit(ReplyRefused(str(error)))
            return
        except Exception as error:  # noqa: BLE001 - a tokenizer failure must reach the window
            emit(ReplyRefused(f"could not build the prompt: {type(error).__name__}: {error}"))
            return
        emit(PromptReady(prompt.prompt_tokens, prompt.notice, generation.decode_loop, time.perf_counter_ns()))
        generation.on_progress = emit
        generation.start(request.request_start_ns)
        for event in generation:
            if isinstance(event, FinishedEvent):
                generation.join()  # the finish reaches the window only once the compute thread is free
            emit(event)

    def _race(self, request: RunRace, stop: threading.Event) -> None:
        from core.engine.race_job import RaceModels, run_race_job

        try:
            if self._race_models is None:
                self._race_models = RaceModels()
            run_race_job(request, stop, self._emit, self.loaded, self._race_models)
        finally:
            with self._lock:
                self._race_stops.pop(request.race_id, None)

    def _lab(self, request: RunLab, cancel: threading.Event) -> None:
        lab_id = request.lab_id
        try:
            from core.lab.config import LabConfig
            from core.lab.runner import LabObserver, run_lab

            values: dict[str, Any] = {
                key: tuple(value) if isinstance(value, list) else value for key, value in request.config.items()
            }
            config = LabConfig(**values)
            wanted = (config.model, config.dtype, config.device)
            observer = LabObserver(
                progress=lambda fraction, message: self._emit(LabProgress(lab_id, fraction, message)),
                row_measured=lambda sweep, row: self._emit(LabRow(lab_id, sweep, dict(row))),
            )

            def load(spec, *, device, dtype, progress):
                from core.backend.choice import load_any

                loaded = load_any(
                    spec,
                    device=device,
                    dtype=dtype,
                    progress=progress,
                    trust_remote_code=request.trust_remote_code,
                    allow_pickle=request.allow_pickle,
                    api_key=request.api_key,
                    server_timeout_s=request.server_timeout_s,
                )
                if (spec, dtype, device) == wanted:  # kept, so running the lab again does not load it again
                    self._lab_model, self._lab_model_key = loaded, wanted
                return loaded

            reusable = self._lab_model if self._lab_model_key == wanted else None
            results = run_lab(config, loaded=reusable, observer=observer, cancel=cancel, loader=load)
        except Exception as error:  # noqa: BLE001 - the tab must stay usable whatever went wrong
            self._emit(LabFailed(lab_id, f"{type(error).__name__}: {error}"))
            return
        finally:
            with self._lock:
                self._cancels.pop(lab_id, None)
        self._emit(LabFinished(lab_id, results.to_dict()))
