"""One reply: it owns its request's stop event and its trace, runs on the compute thread, and yields timed events."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from core.compute_thread import ComputeThread, compute_thread
from core.generation.reply import Reply
from core.model.loader import LoadedModel
from core.settings import LEAN_LOOP, GenerationSettings
from core.timing.cpu_share import process_cpu_s
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PrefillProgress,
    PromptCacheReport,
    StopReason,
    TokenEvent,
)
from core.timing.trace import ReplyTrace

if TYPE_CHECKING:
    from core.generation.decode.prompt_cache import CacheRequest, CacheUse

GENERATE_KEEPS_NO_CACHE = (
    "generate() keeps no prompt cache between turns: the whole prompt was prefilled (the lean loop keeps one)"
)

# Longer than the worst prefill we expect on a CPU (a full 8k-token context of a small model
# takes well under a minute here); it only guards against a generating thread that died silently.
DEFAULT_TOKEN_TIMEOUT_S = 300.0


class LocalReply(Reply):
    """One reply being generated. Iterate it for events; generation.trace records them as they pass.

    stop is the reply's own stop event, usually made with its request: setting it (here or through
    stop()) ends the reply at the next decoder layer during prefill and after the current token during
    decode. A stop set before start() generates nothing.

    on_progress, when given, is called on the iterating thread with each ComputeStarted, PromptCacheReport,
    PrefillProgress and CpuUsage event (the job began on the compute thread; how much of the prompt was cached;
    the prompt's pass reached a layer; the CPU time the reply's compute got). The trace records them too; iteration yields only tokens and the finish.

    cache: the chat this reply continues and what its prompt was made from (core.chats.session.PromptPieces),
    for the decoder's prompt cache; None or cache.enabled False prefills the whole prompt.
    """

    def __init__(
        self,
        loaded: LoadedModel,
        input_ids: Sequence[int],
        settings: GenerationSettings,
        *,
        stop: threading.Event | None = None,
        timeout_s: float = DEFAULT_TOKEN_TIMEOUT_S,
        logits_processors: Sequence[object] = (),
        thread: ComputeThread | None = None,
        on_progress: Callable[[ComputeStarted | PrefillProgress | PromptCacheReport | CpuUsage], None] | None = None,
        cache: CacheRequest | None = None,
    ):
        from core.generation.decode.choice import loop_for
        from core.generation.streamer import TimedTokenStreamer

        self.loaded = loaded
        self.input_ids = list(input_ids)
        self.settings = settings
        self.timeout_s = timeout_s
        self.stop_event = stop if stop is not None else threading.Event()
        self.trace: ReplyTrace | None = None
        self._logits_processors = list(logits_processors)
        self.on_progress = on_progress
        self.cache = cache
        self._streamer = TimedTokenStreamer(loaded.tokenizer, timeout_s=timeout_s)
        # By default the process's compute thread, where the model was loaded: one OpenMP pool.
        self._thread = thread if thread is not None else compute_thread()
        self._done = threading.Event()
        self._finished = False
        # Which loop runs, and why not the one asked for: shown with the reply and kept in exports.
        self.decode_loop, self.decode_loop_note = loop_for(loaded.model, settings.decode_loop)

    @property
    def prompt_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def request_start_ns(self) -> int | None:
        return self.trace.request_start_ns if self.trace is not None else None

    def start(self, request_start_ns: int | None = None) -> LocalReply:
        """Begin generating. request_start_ns defaults to now: TTFT and E2E count from it."""
        start_ns = request_start_ns if request_start_ns is not None else time.perf_counter_ns()
        self.trace = ReplyTrace(start_ns, self.prompt_tokens)
        self._thread.submit(self._run)
        return self

    def __iter__(self) -> Iterator[TokenEvent | FinishedEvent]:
        if self.trace is None:
            raise RuntimeError("call start() before iterating a LocalReply")
        while not self._finished:
            try:
                event = next(self._streamer)
            except StopIteration:
                return
            except queue.Empty:
                self.stop()
                event = FinishedEvent(
                    StopReason.ERROR,
                    self._streamer.tokens_seen,
                    time.perf_counter_ns(),
                    error=f"no token arrived within {self.timeout_s:g} s; generation was abandoned",
                )
            if isinstance(event, FinishedEvent):
                self._finished = True
            self.trace.record(event)
            if isinstance(event, (PrefillProgress, ComputeStarted, PromptCacheReport, CpuUsage)):
                if self.on_progress is not None:
                    self.on_progress(event)
                continue
            yield event

    def _run(self) -> None:
        from core.generation.stopping import PassInterrupted  # imports torch: not at module level (cold start)

        started_ns, started_cpu_s = time.perf_counter_ns(), process_cpu_s()
        self._streamer.put_event(ComputeStarted(started_ns))
        finished_reason = StopReason.ERROR
        error: str | None = None
        try:
            if not self.stop_event.is_set():
                self._generate()
            finished_reason = self._stop_reason()
        except PassInterrupted:
            finished_reason = self._stop_reason()
        except BaseException as exc:  # noqa: BLE001 - every failure must reach the consumer
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self._streamer.put_event(
                CpuUsage(
                    process_cpu_s() - started_cpu_s, (time.perf_counter_ns() - started_ns) / 1e9, _compute_threads()
                )
            )
            self._streamer.finish(
                FinishedEvent(
                    finished_reason if error is None else StopReason.ERROR,
                    self._streamer.tokens_seen,
                    time.perf_counter_ns(),
                    tail_text=self._streamer.held_back_text(),
                    error=error,
                )
            )
            self._done.set()

    def _generate(self) -> None:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList, set_seed

        from core.generation.stopping import StopOnEvent, interruptible_prefill

        loaded = self.loaded
        settings = self.settings
        device = loaded.model.device
        input_ids = torch.tensor([self.input_ids], dtype=torch.long, device=device)
        if settings.seed is not None:
            set_seed(settings.seed)
        eos = sorted(loaded.eos_token_ids)
        processors = LogitsProcessorList(self._logits_processors)
        streamer = self._streamer

        def progress(layers_done: int, layers_total: int) -> None:
            # Called per layer during the prompt's pass only: one stamp and a queue put.
            streamer.put_event(PrefillProgress(layers_done, layers_total, time.perf_counter_ns()))

        with torch.inference_mode():
            if self.decode_loop == LEAN_LOOP:
                from core.generation.decode.choice import lean_decoder
                from core.generation.decode.loop import lean_decode

                lean_decode(
                    lean_decoder(loaded.model),
                    input_ids,
                    settings.max_new_tokens,
                    eos_token_ids=eos,
                    streamer=self._streamer,
                    logits_processor=processors,
                    temperature=None if settings.greedy else settings.temperature,
                    top_p=settings.top_p,
                    stop_event=self.stop_event,
                    prefill_progress=progress,
                    cache=self.cache,
                    cache_used=lambda use: streamer.put_event(cache_report(use, self.cache)),
                )
                return
            streamer.put_event(PromptCacheReport(len(self.input_ids), 0, GENERATE_KEEPS_NO_CACHE))
            sampling: dict = {"do_sample": False}
            if not settings.greedy:
                sampling = {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0}
            with interruptible_prefill(loaded.model, self.stop_event, progress):
                loaded.model.generate(
                    input_ids=input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=settings.max_new_tokens,
                    streamer=self._streamer,
                    stopping_criteria=StoppingCriteriaList([StopOnEvent(self.stop_event)]),
                    logits_processor=processors,
                    pad_token_id=loaded.tokenizer.pad_token_id
                    if loaded.tokenizer.pad_token_id is not None
                    else (eos[0] if eos else None),
                    eos_token_id=eos or None,
                    **sampling,
                )

    def _stop_reason(self) -> StopReason:
        last = self._streamer.last_token_id
        if last is not None and last in self.loaded.eos_token_ids:
            return StopReason.EOS
        if self.stop_event.is_set():
            return StopReason.STOPPED
        return StopReason.MAX_TOKENS


def cache_report(use: CacheUse, cache: CacheRequest | None) -> PromptCacheReport:
    """The decoder's account of a prompt's cache use, worded for the user, stamped as the prefill of the rest begins."""
    return replace(_worded(use, cache), timestamp_ns=time.perf_counter_ns(), memory_bytes=use.memory_bytes)


def _worded(use: CacheUse, cache: CacheRequest | None) -> PromptCacheReport:
    from core.chats.cache_break import break_reason
    from core.chats.session import PromptPieces
    from core.generation.decode import prompt_cache as pc

    def pieces(label: object) -> PromptPieces | None:  # the cache keeps labels opaque; a reply's are PromptPieces
        return label if isinstance(label, PromptPieces) else None

    cached = use.reused
    if use.status == pc.OFF:
        return PromptCacheReport(use.prompt_tokens, 0, "prompt cache off: the whole prompt was prefilled")
    if use.status == pc.EMPTY:
        return PromptCacheReport(use.prompt_tokens, 0, "nothing cached yet: the first reply since the model loaded")
    if use.status == pc.EVICTED:
        reason = "this chat's cache was evicted to stay within the prompt cache's memory bound"
    elif use.status == pc.OTHER_CHAT:
        reason = "this chat had nothing cached; the cache held another chat"
    elif cached < min(use.held, use.prompt_tokens - 1):
        return PromptCacheReport(
            use.prompt_tokens,
            cached,
            break_reason(pieces(use.label), pieces(cache.label if cache else None), cached),
            break_at=cached,
        )
    else:
        return PromptCacheReport(use.prompt_tokens, cached, "the chat's history was reused from the cache")
    if cached:
        reason += f" (the {cached:,} tokens they begin with were reused)"
    return PromptCacheReport(use.prompt_tokens, cached, reason)


def _compute_threads() -> int:
    """The threads a reply computes with: torch's (the kernels use as many)."""
    import torch

    return torch.get_num_threads()
