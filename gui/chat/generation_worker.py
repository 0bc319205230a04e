"""The one bridge from engine to window: a QObject on a QThread that runs a generation and emits its events."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from core.chats.session import ChatSession, Message
from core.errors import LatencyLabError
from core.timing.events import FinishedEvent, StopReason, TokenEvent
from core.generation.reply import DEFAULT_TOKEN_TIMEOUT_S, Generation
from core.compute_thread import on_compute_thread
from core.model.loader import LoadedModel
from core.chats.context_fit import check_reply_budget
from core.settings import GenerationSettings


@dataclass(frozen=True)
class GenerationRequest:
    """A snapshot of what to answer, so the worker never reads state the GUI thread is changing."""

    loaded: LoadedModel
    system_prompt: str
    messages: tuple[Message, ...]
    settings: GenerationSettings
    request_start_ns: int
    logits_processors: tuple = ()


@dataclass(frozen=True)
class GenerationStarted:
    request_start_ns: int
    prompt_tokens: int
    notice: str | None
    decode_loop: str = "generate"  # the loop that runs, after any fallback (core/decode/choice.py)


class GenerationWorker(QObject):
    """Lives on its own QThread. generate() blocks that thread until the reply ends; stop() is thread-safe."""

    started = Signal(object)         # GenerationStarted
    token_received = Signal(object)  # core.timing.events.TokenEvent
    finished = Signal(object)        # core.timing.events.FinishedEvent
    failed = Signal(str)             # the reply could not even start (e.g. the prompt does not fit)

    def __init__(self, token_timeout_s: float = DEFAULT_TOKEN_TIMEOUT_S):
        super().__init__()
        self._token_timeout_s = token_timeout_s
        self._lock = threading.Lock()
        self._current: Generation | None = None
        self._stop_requested = threading.Event()

    @staticmethod
    def call_on_generating_thread(function, timeout_s: float | None = None):
        """Run function where replies are generated: the process's compute thread (core/compute_thread.py)."""
        return on_compute_thread(function, timeout_s)

    def stop(self) -> None:
        """Called directly from the GUI thread: the worker's own event loop is busy generating."""
        self._stop_requested.set()
        with self._lock:
            if self._current is not None:
                self._current.stop()

    @Slot(object)
    def generate(self, request: GenerationRequest) -> None:
        self._stop_requested.clear()
        session = ChatSession(request.system_prompt, [Message(m.role, m.content) for m in request.messages])
        loaded = request.loaded
        try:
            check_reply_budget(request.settings.max_new_tokens, loaded.context_window)
            # On this thread, not the window's: a 1 MB paste takes about a second to tokenize.
            prompt = session.build_prompt(loaded.tokenizer, loaded.context_window, request.settings.max_new_tokens)
            generation = Generation(loaded, prompt.input_ids, request.settings, timeout_s=self._token_timeout_s,
                                    logits_processors=request.logits_processors)
        except LatencyLabError as error:
            self.failed.emit(str(error))
            return
        except Exception as error:  # noqa: BLE001 - a tokenizer failure must reach the window, not kill the thread
            self.failed.emit(f"could not build the prompt: {type(error).__name__}: {error}")
            return
        with self._lock:
            self._current = generation
            if self._stop_requested.is_set():
                generation.stop()
        self.started.emit(GenerationStarted(request.request_start_ns, prompt.prompt_tokens, prompt.notice,
                                            generation.decode_loop))
        finished = False
        try:
            generation.start(request.request_start_ns)
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
        finally:
            with self._lock:
                self._current = None
