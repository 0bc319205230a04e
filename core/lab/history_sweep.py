"""A chat of several turns, timed with the prompt cache on and off: does TTFT follow the history or the new tokens?"""

from __future__ import annotations

from collections.abc import Iterator

from core.chats.session import ChatSession, Message
from core.generation.decode.prompt_cache import CacheRequest
from core.lab.measure import SweepContext, median_or_none, timed_generation
from core.model.loader import LoadedModel

DEFAULT_TURNS = 8
SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."
# About 30 new tokens a turn with the template, as in the prompt-cache issue's measurements.
QUESTIONS = (
    "Tell me one fact about the sea and why it matters to the people who live near it.",
    "Now tell me one fact about mountains and how they shape the weather around them.",
    "What is one thing that makes deserts different from every other kind of landscape?",
    "Name a river that crosses several countries and say why rivers like it are important.",
    "Describe a forest in autumn in one sentence, with the colours you would see there.",
    "Which animal lives in the coldest places on Earth, and how does it stay warm there?",
    "What happens to a lake in winter when the air above it stays below freezing for weeks?",
    "Finally, which of all these places would you visit first, and what would you do there?",
)


def question(turn: int) -> str:
    return QUESTIONS[(turn - 1) % len(QUESTIONS)] + ("" if turn <= len(QUESTIONS) else f" (turn {turn})")


def sweep_history(
    loaded: LoadedModel,
    turns: int,
    new_tokens: int,
    repeats: int,
    context: SweepContext,
    chat_prefix: str = "lab-history",
) -> Iterator[dict]:
    """One row per turn: TTFT with the prompt cache and without it, on the same prompts, medians over the repeats.

    Each repeat is a fresh chat of `turns` turns with the cache on (only each turn's new tokens prefilled), then
    the same prompts again with the cache off (the whole history prefilled each turn), so neither sees the
    other's work. Rows come once every repeat is done, since each is a median over them.
    """
    progress = context.progress
    context.check_cancel()
    progress.announce("history sweep: warm-up")
    timed_generation(
        loaded,
        ChatSession(SYSTEM_PROMPT, [Message("user", question(1))])
        .build_prompt(loaded.tokenizer, loaded.context_window, new_tokens)
        .input_ids,
        min(new_tokens, 4),
        context,
    )
    progress.advance("history sweep: warmed up")
    runs: list[list[dict]] = []
    for repeat in range(repeats):
        chat = f"{chat_prefix}-{repeat}"
        session = ChatSession(SYSTEM_PROMPT)
        measured, prompts = [], []
        for turn in range(1, turns + 1):
            context.check_cancel()
            session.add_user(question(turn))
            prompt = session.build_prompt(loaded.tokenizer, loaded.context_window, new_tokens)
            progress.announce(f"history sweep: turn {turn} of {turns}, prompt cache on, run {repeat + 1}/{repeats}")
            trace = timed_generation(
                loaded, prompt.input_ids, new_tokens, context, cache=CacheRequest(chat, prompt.pieces, True)
            )
            progress.advance(f"history sweep: turn {turn}, cache on, done")
            session.add_assistant(trace.text)
            prompts.append(prompt.input_ids)
            measured.append(
                {
                    "turn": turn,
                    "prompt_tokens": prompt.prompt_tokens,
                    "cached_tokens": trace.cached_tokens,
                    "ttft_on_s": trace.metrics().ttft_s,
                }
            )
        for turn, ids in enumerate(prompts, start=1):
            context.check_cancel()
            progress.announce(f"history sweep: turn {turn} of {turns}, prompt cache off, run {repeat + 1}/{repeats}")
            measured[turn - 1]["ttft_off_s"] = timed_generation(loaded, ids, new_tokens, context).metrics().ttft_s
            progress.advance(f"history sweep: turn {turn}, cache off, done")
        runs.append(measured)
    for turn in range(turns):
        per_run = [run[turn] for run in runs]
        first = per_run[0]
        yield {
            "turn": first["turn"],
            "prompt_tokens": first["prompt_tokens"],
            "cached_tokens": first["cached_tokens"],
            "prefilled_tokens": first["prompt_tokens"] - (first["cached_tokens"] or 0),
            "new_tokens": new_tokens,
            "repeats": len(per_run),
            "ttft_on_s": median_or_none(run["ttft_on_s"] for run in per_run),
            "ttft_off_s": median_or_none(run["ttft_off_s"] for run in per_run),
            "ttft_on_runs_s": [run["ttft_on_s"] for run in per_run],
            "ttft_off_runs_s": [run["ttft_off_s"] for run in per_run],
        }
