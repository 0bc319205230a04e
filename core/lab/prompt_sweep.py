"""The chapter's own experiment: longer and longer prompts, each followed by the same number of new tokens."""

from __future__ import annotations

import threading
from typing import Iterator, Sequence

from core.lab.measure import MeasurementProgress, check_cancel, check_fits, median_or_none, timed_generation
from core.loader import LoadedModel
from core.metrics import LatencyMetrics

CHAPTER_PROMPT_PREFIX = "Repeat after me. "


def chapter_prompt(words: int) -> str:
    return CHAPTER_PROMPT_PREFIX + "word " * words


def chapter_prompt_ids(tokenizer, words: int) -> list[int]:
    """Raw text, tokenized as the chapter does: no chat template, so the token count tracks the word count."""
    return list(tokenizer(chapter_prompt(words))["input_ids"])


def sweep_prompt_lengths(loaded: LoadedModel, prompt_words: Sequence[int], new_tokens: int, repeats: int,
                         cancel: threading.Event | None, progress: MeasurementProgress) -> Iterator[dict]:
    """Yield one row per prompt length, each the median of `repeats` runs, after one unrecorded warm-up.

    Every prompt is checked against the context window first, so a length that cannot fit fails the
    sweep before any time is spent on the others.
    """
    prompts = {words: chapter_prompt_ids(loaded.tokenizer, words) for words in prompt_words}
    for ids in prompts.values():
        check_fits(loaded, len(ids), new_tokens)
    check_cancel(cancel)
    progress.announce("prompt sweep: warm-up")
    timed_generation(loaded, prompts[min(prompt_words)], min(new_tokens, 4), cancel)
    progress.advance("prompt sweep: warmed up")
    for words, ids in prompts.items():
        runs: list[LatencyMetrics] = []
        for repeat in range(repeats):
            check_cancel(cancel)
            progress.announce(f"prompt sweep: {words:,} words ({len(ids):,} tokens), run {repeat + 1}/{repeats}")
            runs.append(timed_generation(loaded, ids, new_tokens, cancel).metrics())
            progress.advance(f"prompt sweep: {words:,} words, run {repeat + 1}/{repeats} done")
        yield prompt_row(words, len(ids), new_tokens, runs)


def prompt_row(words: int, prompt_tokens: int, new_tokens: int, runs: Sequence[LatencyMetrics]) -> dict:
    """Medians over the runs, each metric on its own, and the residuals of the chapter's formula.

    Within one run TPOT is defined as (E2E - TTFT) / (N - 1), so E2E = TTFT + TPOT x (N - 1) exactly.
    The residual here is computed from the three medians taken independently, which need not come from
    the same run, and a second one replaces TPOT by the median gap between tokens (steady_residual),
    which never looks at E2E: that one fails when decode steps are uneven.
    """
    ttft = median_or_none(run.ttft_s for run in runs)
    tpot = median_or_none(run.tpot_s for run in runs)
    e2e = median_or_none(run.e2e_s for run in runs)
    step = median_or_none(run.itl_p50_s for run in runs)
    predicted = ttft + tpot * (new_tokens - 1)
    steady_predicted = ttft + step * (new_tokens - 1)
    return {
        "prompt_words": words,
        "prompt_tokens": prompt_tokens,
        "new_tokens": new_tokens,
        "repeats": len(runs),
        "ttft_s": ttft,
        "tpot_s": tpot,
        "decode_tok_s": 1.0 / tpot if tpot else None,
        "e2e_s": e2e,
        "prefill_tok_s": prompt_tokens / ttft if ttft else None,
        "predicted_e2e_s": predicted,
        "residual_s": e2e - predicted,
        "residual_pct": 100.0 * (e2e - predicted) / e2e,
        "itl_p50_s": step,
        "steady_predicted_e2e_s": steady_predicted,
        "steady_residual_pct": 100.0 * (e2e - steady_predicted) / e2e,
        "ttft_runs_s": [run.ttft_s for run in runs],
        "tpot_runs_s": [run.tpot_s for run in runs],
        "e2e_runs_s": [run.e2e_s for run in runs],
    }
