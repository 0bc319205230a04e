"""Shared plumbing for the sweeps: cancellation, progress counting, and one timed generation of exactly N tokens."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from transformers import LogitsProcessor, MinNewTokensLengthLogitsProcessor

from core.chats.context_fit import check_fits
from core.compute_thread import ComputeThread, compute_thread
from core.generation.decode.prompt_cache import CacheRequest
from core.generation.local_reply import LocalReply
from core.lab.cancellation import MeasurementError, check_cancel
from core.model.loader import LoadedModel
from core.progress import ProgressCallback
from core.settings import GenerationSettings
from core.timing.trace import ReplyTrace

T = TypeVar("T")


@dataclass
class MeasurementProgress:
    """Counts measurements (loads, warm-ups, timed runs) to drive one progress bar across all sweeps."""

    total: int
    callback: ProgressCallback
    done: int = 0

    def announce(self, message: str) -> None:
        self.callback(self.fraction(), message)

    def advance(self, message: str) -> None:
        self.done += 1
        self.callback(self.fraction(), message)

    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 1.0


@dataclass
class SweepContext:
    """What every sweep needs besides its own parameters: progress, the cancel event, and the compute thread.

    All model work of a lab run goes to the process's compute thread, because torch's OpenMP pool belongs
    to the calling thread and a second pool slows decode down (core/compute_thread.py).
    """

    progress: MeasurementProgress
    cancel: threading.Event | None = None
    compute: ComputeThread = field(default_factory=compute_thread)
    decode_loop: str = "lean"

    def check_cancel(self) -> None:
        check_cancel(self.cancel)

    def run(self, function: Callable[[], T]) -> T:
        """Run function on the compute thread and return its result."""
        return self.compute.call(function)


def exact_length_processors(loaded: LoadedModel, prompt_tokens: int, new_tokens: int) -> list:
    """Forbid EOS until N tokens exist, so every run decodes the same count and TPOTs compare."""
    eos = sorted(loaded.eos_token_ids)
    if not eos:
        return []
    return [MinNewTokensLengthLogitsProcessor(prompt_tokens, new_tokens, eos, device=str(loaded.model.device))]


def timed_generation(
    loaded: LoadedModel,
    input_ids: Sequence[int],
    new_tokens: int,
    context: SweepContext,
    cache: CacheRequest | None = None,
    draft_tokens: int = 0,
) -> ReplyTrace:
    """Greedy-decode exactly new_tokens tokens with the app's own timed LocalReply (draft_tokens: with prompt lookup
    speculation, at most that many drafts a step; 0: none).

    The lab's cancel event is the reply's stop event: a cancel lands at the next layer of a prefill, or
    after the current token. cache: the prompt cache's chat for this run; None (every sweep but the history
    sweep) prefills the whole prompt, after setting aside whatever chat the cache held.
    """
    ids = list(input_ids)
    check_fits(len(ids), new_tokens, loaded.context_window)
    cancel = context.cancel
    generation = LocalReply(
        loaded,
        ids,
        GenerationSettings(
            max_new_tokens=new_tokens,
            decode_loop=context.decode_loop,
            speculation="ngram" if draft_tokens else "off",
            draft_tokens=draft_tokens or 1,
        ),
        stop=cancel,
        logits_processors=exact_length_processors(loaded, len(ids), new_tokens),
        thread=context.compute,
        cache=cache,
    )
    trace = generation.run_to_end()
    check_cancel(cancel)
    if trace.error:
        raise MeasurementError(f"generation failed: {trace.error}")
    if trace.output_tokens != new_tokens:
        raise MeasurementError(f"expected {new_tokens} new tokens but the model produced {trace.output_tokens}.")
    return trace


class StepStamper(LogitsProcessor):
    """A logits processor that stamps perf_counter_ns once per decode step, on the generating thread.

    It runs right after each forward pass, so consecutive stamps are one step apart for the whole batch.
    """

    def __init__(self) -> None:
        self.stamps_ns: list[int] = []

    def __call__(self, input_ids, scores):
        self.stamps_ns.append(time.perf_counter_ns())
        return scores


def required_metric(value: float | None) -> float:
    """A metric every measured run has: the sweeps keep only runs of two tokens or more, which give them all."""
    if value is None:
        raise MeasurementError("a run lacks a metric that two or more tokens give")
    return value


def median_or_none(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None
