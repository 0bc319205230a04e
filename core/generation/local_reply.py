"""One reply: it owns its request's stop event and its trace, runs on the compute thread, and yields timed events."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from core.compute_thread import ComputeThread, compute_thread
from core.generation.reply import Reply
from core.kernels.pauses import PACKING_CALLBACKS
from core.model.loader import LoadedModel
from core.settings import LEAN_LOOP, GenerationSettings
from core.timing.cpu_share import process_cpu_s
from core.timing.engine_counters import EngineCounters
from core.timing.events import (
    ComputeStarted,
    CpuUsage,
    FinishedEvent,
    PrefillProgress,
    PromptCacheReport,
    SpeculationReport,
    StopReason,
    TokenEvent,
)

if TYPE_CHECKING:
    from core.generation.decode.drafting import Drafts
    from core.generation.decode.prompt_cache import CacheRequest, CacheUse

SPECULATION_NEEDS_KERNELS = (
    "speculation verifies drafts in one pass on the C kernels (a GGUF in native precision): it was off for this reply"
)
GENERATE_KEEPS_NO_CACHE = (
    "generate() keeps no prompt cache between turns: the whole prompt was prefilled (the lean loop keeps one)"
)

# Longer than the worst prefill we expect on a CPU (a full 8k-token context of a small model
# takes well under a minute here); it only guards against a generating thread that died silently.
DEFAULT_TOKEN_TIMEOUT_S = 300.0


class LocalReply(Reply):
    """One reply being generated on this machine: iterate it for its events (core/generation/reply.py).

    stop is the reply's own stop event, usually made with its request: setting it (here or through
    stop()) ends the reply at the next decoder layer during prefill and after the current token during
    decode. A stop set before start() generates nothing.

    Besides tokens and the finish, its events say when the job began on the compute thread (ComputeStarted), how
    much of the prompt was cached (PromptCacheReport), each layer of the prompt's pass (PrefillProgress) and the CPU
    time the reply's compute got (CpuUsage).

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
        cache: CacheRequest | None = None,
    ):
        from core.generation.decode.choice import loop_for
        from core.generation.detokenizer import IncrementalDetokenizer

        super().__init__(stop)
        self.loaded = loaded
        self.input_ids = list(input_ids)
        self.settings = settings
        self.event_timeout_s = timeout_s
        self._logits_processors = list(logits_processors)
        self.cache = cache
        self._detokenizer = IncrementalDetokenizer(loaded.tokenizer)
        self._tokens_made = 0
        self._last_token_id: int | None = None
        self._counters: EngineCounters | None = None  # from the compute's start to its end
        # By default the process's compute thread, where the model was loaded: one OpenMP pool.
        self._thread = thread if thread is not None else compute_thread()
        # Which loop runs, and why not the one asked for: shown with the reply and kept in exports.
        self.decode_loop, self.decode_loop_note = loop_for(loaded.model, settings.decode_loop)

    @property
    def prompt_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def request_start_ns(self) -> int | None:
        return self.trace.request_start_ns if self.trace is not None else None

    def _begin(self) -> None:
        self._thread.submit(self._run)

    def token_made(self, token_id: int, drafted: bool = False, stamp_ns: int | None = None) -> None:
        """A token the model produced, stamped first thing, on the generating thread (the streamer trap: text comes
        out of a detokenizer at word boundaries, so a stamp taken where text is read lumps tokens together)."""
        stamp_ns = stamp_ns if stamp_ns is not None else time.perf_counter_ns()
        if self._counters is not None:
            self._counters.token()
        text = self._detokenizer.push(token_id)
        self.emit(TokenEvent(self._tokens_made, token_id, text, stamp_ns, drafted=drafted))
        self._tokens_made += 1
        self._last_token_id = token_id

    def _run(self) -> None:
        from core.generation.stopping import PassInterrupted  # imports torch: not at module level (cold start)

        started_ns, started_cpu_s = time.perf_counter_ns(), process_cpu_s()
        self._counters = EngineCounters(PACKING_CALLBACKS)
        self.emit(ComputeStarted(started_ns))
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
            counters, self._counters = self._counters.stop(), None
            self.emit(
                CpuUsage(
                    process_cpu_s() - started_cpu_s,
                    (time.perf_counter_ns() - started_ns) / 1e9,
                    _compute_threads(),
                    **counters,
                )
            )
            self.emit(
                FinishedEvent(
                    finished_reason if error is None else StopReason.ERROR,
                    self._tokens_made,
                    time.perf_counter_ns(),
                    tail_text=self._detokenizer.flush(),
                    error=error,
                )
            )
            self._done.set()

    def _generate(self) -> None:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList, set_seed

        from core.generation.stopping import StopOnEvent, interruptible_prefill
        from core.generation.streamer import TimedTokenStreamer

        loaded = self.loaded
        settings = self.settings
        device = loaded.model.device
        input_ids = torch.tensor([self.input_ids], dtype=torch.long, device=device)
        if settings.seed is not None:
            set_seed(settings.seed)
        eos = sorted(loaded.eos_token_ids)
        processors = LogitsProcessorList(self._logits_processors)

        def progress(layers_done: int, layers_total: int) -> None:
            # Called per layer during the prompt's pass only: one stamp and a queue put.
            self.emit(PrefillProgress(layers_done, layers_total, time.perf_counter_ns()))

        with torch.inference_mode():
            if self.decode_loop == LEAN_LOOP:
                from core.generation.decode.choice import lean_decoder
                from core.generation.decode.loop import lean_decode

                decoder = lean_decoder(loaded.model)
                drafts, refusal = self._drafts(decoder)
                try:
                    lean_decode(
                        decoder,
                        input_ids,
                        settings.max_new_tokens,
                        eos_token_ids=eos,
                        on_token=self.token_made,
                        logits_processor=processors,
                        temperature=None if settings.greedy else settings.temperature,
                        top_p=settings.top_p,
                        stop_event=self.stop_event,
                        prefill_progress=progress,
                        cache=self.cache,
                        cache_used=lambda use: self.emit(cache_report(use, self.cache)),
                        drafts=drafts,
                    )
                finally:
                    if drafts is not None:
                        self.emit(drafts.report())
                    elif refusal is not None:
                        self.emit(SpeculationReport(settings.speculation, 0, 0, 0, refusal))
                return
            if settings.speculation != "off":
                self.emit(SpeculationReport(settings.speculation, 0, 0, 0, SPECULATION_NEEDS_KERNELS))
            self.emit(PromptCacheReport(len(self.input_ids), 0, GENERATE_KEEPS_NO_CACHE, status="off"))
            sampling: dict = {"do_sample": False}
            if not settings.greedy:
                sampling = {"do_sample": True, "temperature": settings.temperature, "top_p": settings.top_p, "top_k": 0}
            with interruptible_prefill(loaded.model, self.stop_event, progress):
                loaded.model.generate(
                    input_ids=input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    max_new_tokens=settings.max_new_tokens,
                    streamer=TimedTokenStreamer(loaded.tokenizer, self.token_made),
                    stopping_criteria=StoppingCriteriaList([StopOnEvent(self.stop_event)]),
                    logits_processor=processors,
                    pad_token_id=loaded.tokenizer.pad_token_id
                    if loaded.tokenizer.pad_token_id is not None
                    else (eos[0] if eos else None),
                    eos_token_id=eos or None,
                    **sampling,
                )

    def _drafts(self, decoder) -> tuple[Drafts | None, str | None]:
        """(the reply's drafter, or None; why speculation that was asked for cannot run, or None)."""
        settings = self.settings
        if settings.speculation == "off":
            return None, None
        if not hasattr(decoder, "verify"):
            return None, SPECULATION_NEEDS_KERNELS
        if settings.speculation == "draft" and settings.draft_model:
            from core.generation.decode.draft_model import ModelDrafts, draft_model_for

            draft = draft_model_for(self.loaded, settings.draft_model)
            return ModelDrafts(settings.draft_tokens, decoder.verify, decoder.keep, draft), None
        from core.generation.decode.drafting import Drafts

        return Drafts(settings.draft_tokens, decoder.verify, decoder.keep), None

    def _stop_reason(self) -> StopReason:
        last = self._last_token_id
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
    status = use.status
    if use.status == pc.OFF:
        return PromptCacheReport(use.prompt_tokens, 0, "prompt cache off: the whole prompt was prefilled", status="off")
    if use.status == pc.EMPTY:
        return PromptCacheReport(
            use.prompt_tokens, 0, "nothing cached yet: the first reply since the model loaded", status="empty"
        )
    if use.status == pc.EVICTED:
        reason = "this chat's cache was evicted to stay within the prompt cache's memory bound"
    elif use.status == pc.OTHER_CHAT and _first_turn(pieces(cache.label if cache else None)):
        # Nothing of this chat was lost: it had no history yet. Not a loss for the diagnosis to blame.
        reason, status = "a new chat: no history of its own to reuse yet", "new"
    elif use.status == pc.OTHER_CHAT:
        reason = "this chat had nothing cached; the cache held another chat"
    elif cached < min(use.held, use.prompt_tokens - 1):
        return PromptCacheReport(
            use.prompt_tokens,
            cached,
            break_reason(pieces(use.label), pieces(cache.label if cache else None), cached),
            break_at=cached,
            status="broke",
        )
    else:
        return PromptCacheReport(
            use.prompt_tokens, cached, "the chat's history was reused from the cache", status="hit"
        )
    if cached:
        reason += f" (the {cached:,} tokens they begin with were reused)"
    return PromptCacheReport(use.prompt_tokens, cached, reason, status=status)


def _first_turn(pieces) -> bool:
    """Whether the prompt is a chat's first message: no earlier turn in it, none left out before it."""
    return pieces is not None and not pieces.dropped and len(pieces.messages) <= 1


def _compute_threads() -> int:
    """The threads a reply computes with: torch's (the kernels use as many)."""
    import torch

    return torch.get_num_threads()
