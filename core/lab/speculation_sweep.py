"""Draft length against TPOT: prompt lookup speculation with k drafts a step, on a copying prompt and a free one.

The chapter's terms: a verify pass of k + 1 positions reads the weights once, as one decode step does, so every
accepted draft is a token nearly free where decode is bound by memory; where the CPU is bound by arithmetic instead
(a small model in cache), checking k positions costs more and accepted drafts save less.
"""

from __future__ import annotations

from collections.abc import Iterator

from core.chats.session import ChatSession, Message
from core.lab.measure import SweepContext, median_or_none, timed_generation
from core.model.loader import LoadedModel

DEFAULT_DRAFT_LENGTHS = (0, 1, 2, 4, 8)  # 0: no speculation, the baseline of each prompt
PARAGRAPH = (
    "The lighthouse keeper climbed the narrow stairs every evening at dusk, carrying a small lamp and a notebook in "
    "which he wrote the weather, the ships he saw, and the names of the birds that rested on the rail."
)
# A prompt the embedded model really copies (it gives the paragraph back), and one it writes freely.
PROMPTS = {
    "copying": f"Repeat this text exactly, word for word: {PARAGRAPH}",
    "free": "Write a short story about a lighthouse keeper and the birds that rest on his rail.",
}


def sweep_draft_lengths(
    loaded: LoadedModel, draft_lengths: tuple[int, ...], new_tokens: int, repeats: int, context: SweepContext
) -> Iterator[dict]:
    """One row per (prompt, draft length): TPOT (median over the repeats), its ratio to no speculation on the same
    prompt, drafts accepted, tokens per verify pass, and whether the reply is the one without speculation."""
    progress = context.progress
    for kind, text in PROMPTS.items():
        ids = (
            ChatSession("", [Message("user", text)])
            .build_prompt(loaded.tokenizer, loaded.context_window, new_tokens)
            .input_ids
        )
        baseline_tpot, baseline_ids = None, None
        for draft_tokens in draft_lengths:
            context.check_cancel()
            progress.announce(f"speculation sweep: {kind} prompt, {draft_tokens or 'no'} drafts a step")
            traces = [
                timed_generation(loaded, ids, new_tokens, context, draft_tokens=draft_tokens) for _ in range(repeats)
            ]
            progress.advance(f"speculation sweep: {kind}, k={draft_tokens} done")
            tpot = median_or_none(trace.metrics().tpot_s for trace in traces)
            report = traces[-1].speculation
            if draft_tokens == 0:
                baseline_tpot, baseline_ids = tpot, traces[-1].token_ids
            drafted = report.drafted if report else 0
            accepted = report.accepted if report else 0
            passes = report.passes if report and report.passes else 0
            yield {
                "prompt": kind,
                "draft_tokens": draft_tokens,
                "new_tokens": new_tokens,
                "tpot_s": tpot,
                "tpot_ratio": tpot / baseline_tpot if tpot and baseline_tpot else None,
                "drafted": drafted,
                "accepted": accepted,
                "acceptance": accepted / drafted if drafted else None,
                "verify_passes": passes,
                "tokens_per_pass": (accepted + passes) / passes if passes else None,
                "same_reply": baseline_ids is not None and traces[-1].token_ids == baseline_ids,
            }
