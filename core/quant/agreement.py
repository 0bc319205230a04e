"""Top-1 next-token agreement between two models over the same text, the fast path's quality measure."""

from __future__ import annotations

from pathlib import Path

# Package data beside this module, so an installed (not editable) copy finds it too.
AGREEMENT_TEXT_FILE = Path(__file__).with_name("agreement_text.txt")


def agreement_text() -> str:
    return AGREEMENT_TEXT_FILE.read_text(encoding="utf-8")


def top1_agreement(reference, candidate, token_ids: list[int]) -> float:
    """Share of positions where both loaded models' most likely next token is the same (teacher-forced)."""
    expected = reference.position_logits(token_ids).argmax(-1)
    got = candidate.position_logits(token_ids).argmax(-1)
    return float((expected == got).float().mean())
