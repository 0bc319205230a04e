"""Run model.generate on its own thread and yield timed token events, then one finish event."""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterator, Sequence

from core.timing.events import FinishedEvent, StopReason, TokenEvent
from core.compute_thread import ComputeThread, compute_thread
from core.model.loader import LoadedModel
from core.settings import LEAN_LOOP, GenerationSettings

# Longer than the worst prefill we expect on a CPU (a full 8k-token context of a small model
# takes well under a minute here); it only guards against a generating thread that died silently.
DEFAULT_TOKEN_TIMEOUT_S = 300.0


class Generation:
    """One reply being generated. Iterate it for events; stop() ends it within one decode step."""

    def __init__(
        self,
        loaded: LoadedModel,
        input_ids: Sequence[int],
        settings: GenerationSettings,
        *,
        timeout_s: float = DEFAULT_TOKEN_TIMEOUT_S,
        logits_processors: Sequence[object] = (),
        thread: ComputeThread | None = None,
    ):
        from core.generation.streamer import TimedTokenStreamer

        self.loaded = loaded
        self.input_ids = list(input_ids)
        self.settings = settings
        self.timeout_s = timeout_s
        self.request_start_ns: int | None = None
        self._logits_processors = list(logits_processors)
        self._stop_requested = threading.Event()
        self._streamer = TimedTokenStreamer(loaded.tokenizer, timeout_s=timeout_s)
        # By default the process's compute thread, where the model was loaded: one OpenMP pool.
        self._thread = thread if thread is not None else compute_thread()
        self._done = threading.Event()
        self._finished = False
        from core.generation.decode.choice import loop_for

        # Which loop runs, and why not the one asked for: shown with the reply and kept in exports.
        self.decode_loop, self.decode_loop_note = loop_for(loaded.model, settings.decode_loop)

    @property
    def prompt_tokens(self) -> int:
        return len(self.input_ids)

    def start(self, request_start_ns: int | None = None) -> "Generation":
        """Begin generating. request_start_ns defaults to now: TTFT and E2E count from it."""
        self.request_start_ns = request_start_ns if request_start_ns is not None else time.perf_counter_ns()
        self._thread.submit(self._run)
        return self

    def stop(self) -> None:
        self._stop_requested.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until model.generate has returned; True when it has."""
        return self._done.wait(timeout)

    def __iter__(self) -> Iterator[TokenEvent | FinishedEvent]:
        if self.request_start_ns is None:
            raise RuntimeError("call start() before iterating a Generation")
        while not self._finished:
            try:
                event = next(self._streamer)
            except StopIteration:
                return
            except queue.Empty:
                self.stop()
                self._finished = True
                yield FinishedEvent(
                    StopReason.ERROR, self._streamer.tokens_seen, time.perf_counter_ns(),
                    error=f"no token arrived within {self.timeout_s:g} s; generation was abandoned",
                )
                return
            if isinstance(event, FinishedEvent):
                self._finished = True
            yield event

    def _run(self) -> None:
        from core.generation.stopping import PassInterrupted  # imports torch: not at module level (cold start)

        finished_reason = StopReason.ERROR
        error: str | None = None
        try:
            if not self._stop_requested.is_set():
                self._generate()
            finished_reason = self._stop_reason()
        except PassInterrupted:
            finished_reason = self._stop_reason()
        except BaseException as exc:  # noqa: BLE001 - every failure must reach the consumer
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._streamer.finish(FinishedEvent(
                finished_reason if error is None else StopReason.ERROR,
                self._streamer.tokens_seen,
                time.perf_counter_ns(),
                tail_text=self._streamer.held_back_text(),
                error=error,
            ))
            self._done.set()

    def _generate(self) -> None:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList, set_seed

        from core.generation.stopping import StopOnEvent, interruptible_prefill

        loaded = self.loaded
        settings = self.settings
        device = loaded.model.device
        input_ids = torch.tensor([self.input_ids], dtype=torch.long, device=device)
        sampling: dict = {"do_sample": False}
        if not settings.greedy:
            sampling = {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0}
        if settings.seed is not None:
            set_seed(settings.seed)
        eos = sorted(loaded.eos_token_ids)
        stopping = StoppingCriteriaList([StopOnEvent(self._stop_requested)])
        processors = LogitsProcessorList(self._logits_processors)
        with torch.inference_mode():
            if self.decode_loop == LEAN_LOOP:
                from core.generation.decode.choice import lean_decoder
                from core.generation.decode.loop import lean_decode

                lean_decode(lean_decoder(loaded.model), input_ids, settings.max_new_tokens, eos_token_ids=eos,
                            streamer=self._streamer, stopping_criteria=stopping, logits_processor=processors,
                            temperature=None if settings.greedy else settings.temperature, top_p=settings.top_p,
                            stop_event=self._stop_requested)
                return
            with interruptible_prefill(loaded.model, self._stop_requested):
                loaded.model.generate(
                    input_ids=input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=settings.max_new_tokens,
                    streamer=self._streamer,
                    stopping_criteria=stopping,
                    logits_processor=processors,
                    pad_token_id=loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None
                    else (eos[0] if eos else None),
                    eos_token_id=eos or None,
                    **sampling,
                )

    def _stop_reason(self) -> StopReason:
        last = self._streamer.last_token_id
        if last is not None and last in self.loaded.eos_token_ids:
            return StopReason.EOS
        if self._stop_requested.is_set():
            return StopReason.STOPPED
        return StopReason.MAX_TOKENS
