"""The one bridge from engine to window: a QObject on its own QThread that relays one reply's events as signals.

It never generates: the reply runs on core's compute thread; this thread builds the prompt (which can
take a second for a huge paste) and then waits on the reply's events so the GUI thread never blocks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from core.errors import LatencyLabError
from core.generation.reply import DEFAULT_TOKEN_TIMEOUT_S
from core.generation.request import ReplyRequest, prepare_reply
from core.model.loader import LoadedModel
from core.timing.events import FinishedEvent, StopReason, TokenEvent


@dataclass(frozen=True)
class RelayJob:
    """A reply to relay: the model to answer with and the request (which carries its own stop event)."""

    loaded: LoadedModel
    request: ReplyRequest


@dataclass(frozen=True)
class GenerationStarted:
    request_start_ns: int
    prompt_tokens: int
    notice: str | None
    decode_loop: str = "generate"  # the loop that runs, after any fallback (core/generation/decode/choice.py)


class ReplyRelay(QObject):
    """Lives on its own QThread; relay() blocks that thread until the reply ends. To stop, set the request's event."""

    started = Signal(object)         # GenerationStarted
    token_received = Signal(object)  # core.timing.events.TokenEvent
    finished = Signal(object)        # core.timing.events.FinishedEvent
    failed = Signal(str)             # the reply could not even start (e.g. the prompt does not fit)

    def __init__(self, token_timeout_s: float = DEFAULT_TOKEN_TIMEOUT_S):
        super().__init__()
        self._token_timeout_s = token_timeout_s

    @Slot(object)
    def relay(self, job: RelayJob) -> None:
        try:
            generation, prompt = prepare_reply(job.loaded, job.request, self._token_timeout_s)
        except LatencyLabError as error:
            self.failed.emit(str(error))
            return
        except Exception as error:  # noqa: BLE001 - a tokenizer failure must reach the window, not kill the thread
            self.failed.emit(f"could not build the prompt: {type(error).__name__}: {error}")
            return
        self.started.emit(GenerationStarted(job.request.request_start_ns, prompt.prompt_tokens, prompt.notice,
                                            generation.decode_loop))
        finished = False
        try:
            generation.start(job.request.request_start_ns)
            for event in generation:
                if isinstance(event, TokenEvent):
                    self.token_received.emit(event)
                else:
                    generation.join()
                    finished = True
                    self.finished.emit(event)
        except Exception as error:  # noqa: BLE001 - the window waits for exactly one finish after started
            generation.stop()
            if not finished:
                self.finished.emit(FinishedEvent(StopReason.ERROR, 0, time.perf_counter_ns(),
                                                 error=f"{type(error).__name__}: {error}"))
