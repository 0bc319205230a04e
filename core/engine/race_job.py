"""A race as the engine runs it: the models loaded (or the chat's reused), every event and the result sent as data."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from core.engine.messages import RaceFailed, RaceFinished, RaceProgress, RaceReplyEvent, RaceStarted, RunRace
from core.errors import LatencyLabError
from core.race.sides import RaceSide

# The last race's models stay loaded, so racing again (or swapping A and B) does not load them again.
MODELS_KEPT = 2


class RaceModels:
    """Models the races loaded, the most recent kept; the chat's own model is used where a side asks for it."""

    def __init__(self):
        self._held: OrderedDict[tuple, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, side: RaceSide, chat_model, load: Callable[[RaceSide], object]):
        key = side.load_key
        with self._lock:
            if key in self._held:
                self._held.move_to_end(key)
                return self._held[key]
        if chat_model is not None and is_same_model(chat_model, side):
            return chat_model
        loaded = load(side)
        with self._lock:
            self._held[key] = loaded
            while len(self._held) > MODELS_KEPT:
                self._held.popitem(last=False)
        return loaded

    def clear(self) -> None:
        with self._lock:
            self._held.clear()


def is_same_model(loaded, side: RaceSide) -> bool:
    """The chat's model is this side's: the same local weights at the same precision and device."""
    from core.model.source import resolve_model_source

    if loaded.is_remote or side.remote:
        return False
    try:
        return (loaded.dtype, loaded.device) == (side.dtype, side.device) and resolve_model_source(
            side.model
        ) == loaded.source
    except LatencyLabError:
        return False


def run_race_job(
    request: RunRace, cancel: threading.Event, emit: Callable[[object], None], chat_model, models: RaceModels
) -> None:
    from core.backend.choice import load_any
    from core.race.config import RaceConfig
    from core.race.document import race_json
    from core.race.runner import RaceObserver, run_race

    race_id = request.race_id
    try:
        config = RaceConfig.from_dict(request.config)
    except LatencyLabError as error:
        emit(RaceFailed(race_id, str(error)))
        return

    def load(side: RaceSide):
        return load_any(
            side.model,
            device=side.device,
            dtype=side.dtype,
            progress=lambda fraction, message: emit(RaceProgress(race_id, f"{side.name}: {message}")),
            trust_remote_code=request.trust_remote_code,
            allow_pickle=request.allow_pickle,
            api_key=request.api_key,
            server_timeout_s=side.server_timeout_s,
        )

    observer = RaceObserver(
        progress=lambda message: emit(RaceProgress(race_id, message)),
        event=lambda side, event: emit(RaceReplyEvent(race_id, side, event)),
        started=lambda sides, start_ns: emit(RaceStarted(race_id, sides, start_ns)),
    )
    try:
        result = run_race(config, lambda side: models.get(side, chat_model, load), cancel=cancel, observer=observer)
        emit(RaceFinished(race_id, race_json(result)))
    except Exception as error:  # noqa: BLE001 - the race window must stay usable whatever went wrong
        emit(RaceFailed(race_id, f"{type(error).__name__}: {error}"))
