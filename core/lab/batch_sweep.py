"""Identical prompts decoded together: aggregate and per-sequence speed at each batch size."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from core.chats.context_fit import check_fits
from core.lab.measure import (
    MeasurementError,
    StepStamper,
    SweepContext,
    check_cancel,
    median_or_none,
)
from core.lab.prompt_sweep import chapter_prompt_ids
from core.model.loader import LoadedModel

# A short prompt keeps prefill small, so the rows show decode; identical prompts need no padding.
BATCH_PROMPT_WORDS = 10


def sweep_batch_sizes(
    loaded: LoadedModel, batch_sizes: Sequence[int], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    ids = chapter_prompt_ids(loaded.tokenizer, BATCH_PROMPT_WORDS)
    check_fits(len(ids), new_tokens, loaded.context_window)
    progress, cancel = context.progress, context.cancel
    context.check_cancel()
    progress.announce("batch sweep: warm-up")
    context.run(lambda: decode_batch(loaded, ids, 1, min(new_tokens, 4), cancel))
    progress.advance("batch sweep: warmed up")
    for batch_size in batch_sizes:
        runs = []
        try:
            for repeat in range(repeats):
                context.check_cancel()
                progress.announce(f"batch sweep: batch {batch_size}, run {repeat + 1}/{repeats}")
                runs.append(context.run(partial(decode_batch, loaded, ids, batch_size, new_tokens, cancel)))
                progress.advance(f"batch sweep: batch {batch_size}, run {repeat + 1}/{repeats} done")
        except MeasurementError as error:
            # A batch too big for this machine's memory should not cost the rows of the smaller ones.
            progress.done += repeats - len(runs) - 1
            progress.advance(f"batch sweep: batch {batch_size} failed")
            yield {"batch_size": batch_size, "error": str(error)}
            continue
        step = statistics.median(run.step_s for run in runs)  # runs holds `repeats` runs, at least one
        yield {
            "batch_size": batch_size,
            "prompt_tokens": len(ids),
            "new_tokens": new_tokens,
            "repeats": len(runs),
            "ttft_s": median_or_none(run.ttft_s for run in runs),
            "step_time_s": step,
            "mean_step_time_s": median_or_none(run.mean_step_s for run in runs),
            "per_seq_tok_s": 1.0 / step,
            "aggregate_tok_s": batch_size / step,
        }


@dataclass(frozen=True)
class BatchRun:
    """Seconds: the batch's TTFT, its median decode step, and its mean decode step (the batch analogue of TPOT)."""

    ttft_s: float
    step_s: float
    mean_step_s: float


def decode_batch(
    loaded: LoadedModel, ids: Sequence[int], batch_size: int, new_tokens: int, cancel: threading.Event | None
) -> BatchRun:
    """Greedy-decode exactly new_tokens for batch_size copies of ids, stamping every step.

    Every step yields one token for each sequence, so a step is also each sequence's time per output
    token. The median step is the headline: other processes sharing the CPU stretch a few steps, and
    the median shrugs those off where the mean does not.
    """
    from core.generation.decode.choice import on_kernels

    eos = sorted(loaded.eos_token_ids)
    start_ns = time.perf_counter_ns()
    try:
        if on_kernels(loaded.model):
            # The native kernels decode the sequences together themselves: one weight read per step for all.
            from core.generation.decode.kernel_batch import decode_together

            stamps = decode_together(loaded.model, ids, batch_size, new_tokens, suppress=eos, cancel=cancel)
        else:
            stamps = _generate_batch(loaded, ids, batch_size, new_tokens, eos, cancel)
    except (RuntimeError, MemoryError) as error:
        raise MeasurementError(f"batch {batch_size} failed: {type(error).__name__}: {error}") from error
    check_cancel(cancel)
    if len(stamps) != new_tokens:
        raise MeasurementError(f"batch {batch_size}: expected {new_tokens} decode steps, saw {len(stamps)}.")
    gaps = [(later - earlier) / 1e9 for earlier, later in zip(stamps, stamps[1:])]
    return BatchRun((stamps[0] - start_ns) / 1e9, statistics.median(gaps), sum(gaps) / len(gaps))


def _generate_batch(
    loaded: LoadedModel,
    ids: Sequence[int],
    batch_size: int,
    new_tokens: int,
    eos: list[int],
    cancel: threading.Event | None,
) -> list[int]:
    """transformers' generate() over the batch, stamped by a logits processor at every step."""
    import torch
    from transformers import LogitsProcessorList, StoppingCriteriaList

    from core.generation.stopping import StopOnEvent

    stamper = StepStamper()
    input_ids = torch.tensor([list(ids)] * batch_size, dtype=torch.long, device=loaded.model.device)
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else (eos[0] if eos else None)
    with torch.inference_mode():
        loaded.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            logits_processor=LogitsProcessorList([stamper]),
            stopping_criteria=StoppingCriteriaList([StopOnEvent(cancel or threading.Event())]),
            pad_token_id=pad,
            eos_token_id=eos or None,
        )
    return stamper.stamps_ns
