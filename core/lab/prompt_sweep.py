"""The chapter's own experiment: longer and longer prompts, each followed by the same number of new tokens."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence

from core.chats.context_fit import check_fits
from core.lab.measure import SweepContext, median_or_none, required_metric, timed_generation
from core.model.loader import LoadedModel
from core.timing.metrics import LatencyMetrics

CHAPTER_PROMPT_PREFIX = "Repeat after me. "


def chapter_prompt(words: int) -> str:
    return CHAPTER_PROMPT_PREFIX + "word " * words


def chapter_prompt_ids(tokenizer, words: int) -> list[int]:
    """Raw text, tokenized as the chapter does: no chat template, so the token count tracks the word count."""
    return list(tokenizer(chapter_prompt(words))["input_ids"])


def sweep_prompt_lengths(
    loaded: LoadedModel, prompt_words: Sequence[int], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """Yield one row per prompt length, each the median of `repeats` runs, after one unrecorded warm-up.

    Every prompt is checked against the context window first, so a length that cannot fit fails the
    sweep before any time is spent on the others.
    """
    prompts = {words: chapter_prompt_ids(loaded.tokenizer, words) for words in prompt_words}
    for ids in prompts.values():
        check_fits(len(ids), new_tokens, loaded.context_window)
    progress = context.progress
    context.check_cancel()
    progress.announce("prompt sweep: warm-up")
    timed_generation(loaded, prompts[min(prompt_words)], min(new_tokens, 4), context)
    progress.advance("prompt sweep: warmed up")
    for words, ids in prompts.items():
        runs: list[LatencyMetrics] = []
        for repeat in range(repeats):
            context.check_cancel()
            progress.announce(f"prompt sweep: {words:,} words ({len(ids):,} tokens), run {repeat + 1}/{repeats}")
            runs.append(timed_generation(loaded, ids, new_tokens, context).metrics())
            progress.advance(f"prompt sweep: {words:,} words, run {repeat + 1}/{repeats} done")
        yield prompt_row(words, len(ids), new_tokens, runs)


def prompt_row(words: int, prompt_tokens: int, new_tokens: int, runs: Sequence[LatencyMetrics]) -> dict:
    """Medians over the runs, each metric on its own, and two residuals of the chapter's formula.

    Within one run TPOT is defined as (E2E - TTFT) / (N - 1), so E2E = TTFT + TPOT x (N - 1) exactly.
    residual_* is therefore computed from the three medians, each taken on its own, which need not
    come from the same run. steady_residual_pct is computed per run with TPOT replaced by that run's
    median gap between tokens, which never looks at E2E, then the median over runs is taken: it is
    far from zero when decode steps are uneven, and one disturbed run cannot move it.
    """
    ttfts = [required_metric(run.ttft_s) for run in runs]
    e2es = [required_metric(run.e2e_s) for run in runs]
    steps = [required_metric(run.itl_p50_s) for run in runs]
    ttft, e2e, step = statistics.median(ttfts), statistics.median(e2es), statistics.median(steps)
    tpot = statistics.median(required_metric(run.tpot_s) for run in runs)
    predicted = ttft + tpot * (new_tokens - 1)
    steady_runs = [
        100.0 * (run_e2e - (run_ttft + run_step * (new_tokens - 1))) / run_e2e
        for run_ttft, run_e2e, run_step in zip(ttfts, e2es, steps)
    ]
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
        "steady_residual_pct": median_or_none(steady_runs),
        "ttft_runs_s": [run.ttft_s for run in runs],
        "tpot_runs_s": [run.tpot_s for run in runs],
        "e2e_runs_s": [run.e2e_s for run in runs],
        "steady_residual_runs_pct": steady_runs,
    }
